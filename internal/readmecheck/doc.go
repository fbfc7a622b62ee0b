// Package readmecheck keeps the Go examples of a Markdown file compiling.
//
// [Extract] finds the fenced ```go blocks of a document; [Generate] turns
// them into one Go source file of a package that also holds a prelude of
// the identifiers the examples take as given (a request context, a mux, a
// key, ...). A block that is a complete file (it starts with "package") is
// kept apart as a file of its own. A fragment becomes the body of a
// function of its own: a block of statements as it is, a block that is one
// expression (a configuration literal) as "_ = expr". Variables a fragment
// declares and leaves unused are used for it, and only the imports it
// refers to are added. A //line directive before each block makes the
// compiler's errors point at the Markdown file's own lines.
//
// A block that is deliberately not compilable is marked by the HTML comment
// <!-- readmecheck: skip --> on the line before its opening fence; keep
// that rare.
//
// The build itself (the go tool, in a temporary directory, with a go.work
// file pointing at this module) runs in the test built with the readme tag:
// `make readme-check`. It does not run the examples, check their output, or
// look at blocks of any other language.
package readmecheck
