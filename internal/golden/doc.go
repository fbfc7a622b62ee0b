// Package golden compares test output with files under a package's testdata/
// directory and rewrites them when tests run with -update:
//
//	go test ./oauthmeta -run TestGolden -update
//
// JSON files are compared after decoding, so formatting changes in a golden
// file do not fail a test but a changed member, value or type does. Text files
// are compared byte for byte.
package golden
