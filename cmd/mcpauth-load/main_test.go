package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunShort(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := run([]string{"-c", "4", "-d", "300ms", "-pool", "8"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "wrongly allowed 0, wrongly refused 0") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestRunBadFlag(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := run([]string{"-nope"}, &out, &errOut); code != 2 {
		t.Errorf("exit %d", code)
	}
}
