package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The long-running commands (authserver, protect) take their settings from
// three layers over the flags' defaults: a YAML file (--config), whose keys
// are the flags' names, environment variables named by flagEnvName, and the
// command line. A layer above wins over the ones below key by key: a
// repeatable flag given on the command line replaces the file's list, it is
// not added to it. Everything here works over the command's flag.FlagSet,
// so a new flag is a new key without further work.

// envPrefix starts the environment variable of every flag: --grant-policy
// is MCPAUTH_GRANT_POLICY.
const envPrefix = "MCPAUTH_"

// flagEnvName is the environment variable that sets the flag name.
func flagEnvName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Sources of a setting, as --print-config shows them.
const (
	sourceDefault = "default"
	sourceFlag    = "flag"
)

// setting is one key of the effective configuration: its values in the
// order they were set (one for a single-valued flag) and where they came
// from.
type setting struct {
	name    string
	entries []settingEntry
	source  string // sourceDefault, sourceFlag, "env MCPAUTH_…" or "file PATH:LINE"
	file    bool   // source is the configuration file
	// repeatable is set for a flag that collects each value it is given.
	repeatable bool
}

// settingEntry is one value of a key. In the file, an entry of a list may
// carry keys of its own, applied right after it: the flags that attach to
// the flag before them (protect's --issuer-* after an --issuer) are
// written under that entry.
type settingEntry struct {
	value  string
	nested []*setting
	line   int // in the file
}

// values returns the entries' values.
func (s *setting) values() []string {
	out := make([]string, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.value
	}
	return out
}

// equal reports whether s and o set the same values (wherever from).
func (s *setting) equal(o *setting) bool {
	if len(s.entries) != len(o.entries) {
		return false
	}
	for i, e := range s.entries {
		oe := o.entries[i]
		if e.value != oe.value || len(e.nested) != len(oe.nested) {
			return false
		}
		for j, n := range e.nested {
			if n.name != oe.nested[j].name || !n.equal(oe.nested[j]) {
				return false
			}
		}
	}
	return true
}

// configView is a command's effective configuration: every flag, its value
// and its source.
type configView struct {
	command string
	keys    []*setting // in the flag set's (sorted) order
	byName  map[string]*setting
}

// layerOptions are the inputs of parseLayered besides the command line.
type layerOptions struct {
	// getenv reads the environment (os.Getenv).
	getenv func(string) string
	// pinned keeps these keys at the given settings whatever the file says
	// now: a reload keeps the restart-only keys as they were.
	pinned map[string]*setting
}

// Flags of every configurable command that are not configuration keys.
const (
	flagConfig      = "config"
	flagPrintConfig = "print-config"
)

// registerConfigFlags declares --config and --print-config on fs.
func registerConfigFlags(fs *flag.FlagSet, path *string, print *bool) {
	fs.StringVar(path, flagConfig, "", "read settings from this YAML `FILE`, whose keys are the flags' names (lists for repeatable flags); "+
		"environment variables "+envPrefix+"<FLAG_NAME> and flags override it; secrets only as env:VAR or file:PATH")
	fs.BoolVar(print, flagPrintConfig, false, "print the effective configuration (each key, its value and its source; secrets redacted) and exit")
}

// parseLayered parses args on fs, then fills every flag the command line
// left unset from its environment variable, then from the --config file;
// it returns the effective configuration. command names the command in
// --print-config's output.
func parseLayered(fs *flag.FlagSet, command string, args []string, opts layerOptions) (*configView, error) {
	given := map[string][]string{}
	restore := recordFlags(fs, given)
	_, err := parseArgs(fs, args, 0, 0)
	restore()
	if err != nil {
		return nil, err
	}
	view := &configView{command: command, byName: map[string]*setting{}}
	for name, values := range given {
		view.byName[name] = newSetting(name, sourceFlag, values)
	}
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == flagConfig || f.Name == flagPrintConfig || view.byName[f.Name] != nil || opts.pinned[f.Name] != nil {
			return
		}
		raw := opts.getenv(flagEnvName(f.Name))
		if raw == "" {
			return
		}
		values := []string{raw}
		if !singleValued(f) {
			values = strings.FieldsFunc(raw, func(r rune) bool { return r == '\n' })
		}
		s := newSetting(f.Name, "env "+flagEnvName(f.Name), values)
		if err := applySetting(fs, s); err != nil {
			errs = append(errs, fmt.Errorf("$%s: %w", flagEnvName(f.Name), err))
			return
		}
		view.byName[f.Name] = s
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	path := fs.Lookup(flagConfig).Value.String()
	if path == "" {
		path = opts.getenv(flagEnvName(flagConfig))
	}
	if path != "" {
		if err := applyConfigFile(fs, path, view, opts.pinned); err != nil {
			return nil, err
		}
	}
	for name, s := range opts.pinned {
		if s.source == sourceDefault || view.byName[name] != nil { // a flag's setting is in view already
			continue
		}
		if err := applySetting(fs, s); err != nil {
			return nil, fmt.Errorf("%s (kept from the running configuration): %w", name, err)
		}
		view.byName[name] = s
	}
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == flagConfig || f.Name == flagPrintConfig {
			return
		}
		s := view.byName[f.Name]
		if s == nil {
			s = &setting{name: f.Name, source: sourceDefault}
			if f.DefValue != "" && singleValued(f) {
				s.entries = []settingEntry{{value: f.DefValue}}
			}
			view.byName[f.Name] = s
		}
		s.repeatable = !singleValued(f)
		if !s.repeatable && len(s.entries) > 1 { // the last one given wins
			s.entries = s.entries[len(s.entries)-1:]
		}
		view.keys = append(view.keys, s)
	})
	return view, nil
}

func newSetting(name, source string, values []string) *setting {
	s := &setting{name: name, source: source}
	for _, v := range values {
		s.entries = append(s.entries, settingEntry{value: v})
	}
	return s
}

// applySetting sets the flag s names to each of its values in turn, each
// followed by its nested keys.
func applySetting(fs *flag.FlagSet, s *setting) error {
	f := fs.Lookup(s.name)
	for _, e := range s.entries {
		if err := f.Value.Set(e.value); err != nil {
			return fmt.Errorf("invalid value %q for %s: %w", redactSecret(s.name, e.value), s.name, err)
		}
		for _, n := range e.nested {
			if err := applySetting(fs, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// singleValued reports whether f takes one value (a later one replaces
// it), as the standard flag types do; a repeatable flag collects each.
func singleValued(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	switch g.Get().(type) {
	case string, bool, int, int64, uint, uint64, float64, time.Duration:
		return true
	}
	return false
}

// recordFlags wraps every flag of fs so that the values the command line
// sets are collected in given; the returned function unwraps them.
func recordFlags(fs *flag.FlagSet, given map[string][]string) (restore func()) {
	orig := map[string]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		orig[f.Name] = f.Value
		r := recorder{Value: f.Value, name: f.Name, given: given}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			f.Value = boolRecorder{r}
		} else {
			f.Value = r
		}
	})
	return func() { fs.VisitAll(func(f *flag.Flag) { f.Value = orig[f.Name] }) }
}

type recorder struct {
	flag.Value
	name  string
	given map[string][]string
}

func (r recorder) Set(v string) error {
	if err := r.Value.Set(v); err != nil {
		return err
	}
	if r.name != flagConfig && r.name != flagPrintConfig {
		r.given[r.name] = append(r.given[r.name], v)
	}
	return nil
}

// String is the wrapped flag's value. The flag package also calls it on a
// zero recorder, with no flag inside, when it prints the defaults for -h.
func (r recorder) String() string {
	if r.Value == nil {
		return ""
	}
	return r.Value.String()
}

type boolRecorder struct{ recorder }

func (boolRecorder) IsBoolFlag() bool { return true }

// String is recorder's, and "false" for a zero boolRecorder, so that -h
// prints no default for a switch that is off by default.
func (r boolRecorder) String() string {
	if r.Value == nil {
		return "false"
	}
	return r.Value.String()
}

// applyConfigFile reads the YAML file at path and applies its keys, in the
// file's order, to the flags that neither the command line nor the
// environment set (nor pinned keeps). Every key is checked whether it is
// applied or not: an unknown key, a secret written in the file and a value
// of the wrong shape are refused with the file's line.
func applyConfigFile(fs *flag.FlagSet, path string, view *configView, pinned map[string]*setting) error {
	doc, err := parseFile("--config", path, func(data []byte) (*yaml.Node, error) {
		var n yaml.Node
		if err := yaml.Unmarshal(data, &n); err != nil {
			return nil, err
		}
		return &n, nil
	})
	if err != nil {
		return err
	}
	if doc.Kind == 0 { // an empty file
		return nil
	}
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: want a mapping of flag names to values", path, root.Line)
	}
	settings, err := fileSettings(fs, path, root, true)
	if err != nil {
		return err
	}
	for _, s := range settings {
		if view.byName[s.name] != nil || pinned[s.name] != nil {
			continue
		}
		if err := applySetting(fs, s); err != nil {
			return fmt.Errorf("%s: %w", s.source[len("file "):], err)
		}
		view.byName[s.name] = s
	}
	return nil
}

// fileSettings reads the keys of a mapping node: top is false for the keys
// nested under a list entry, which may not nest further.
func fileSettings(fs *flag.FlagSet, path string, m *yaml.Node, top bool) ([]*setting, error) {
	var out []*setting
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		name := k.Value
		at := fmt.Sprintf("%s:%d", path, k.Line)
		f := fs.Lookup(name)
		if k.Kind != yaml.ScalarNode || f == nil || name == flagConfig || name == flagPrintConfig {
			return nil, fmt.Errorf("%s: unknown key %q (the keys are the flags of mcpauth %s, without the dashes)", at, name, strings.TrimPrefix(fs.Name(), "mcpauth "))
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: key %q given twice", at, name)
		}
		seen[name] = true
		s := &setting{name: name, source: "file " + at, file: true}
		switch v.Kind {
		case yaml.ScalarNode:
			if v.Tag == "!!null" {
				return nil, fmt.Errorf("%s: key %q has no value", at, name)
			}
			s.entries = []settingEntry{{value: v.Value, line: v.Line}}
		case yaml.SequenceNode:
			if singleValued(f) {
				return nil, fmt.Errorf("%s: key %q takes one value, not a list", at, name)
			}
			for _, item := range v.Content {
				e, err := fileEntry(fs, path, name, item, top)
				if err != nil {
					return nil, err
				}
				s.entries = append(s.entries, e)
			}
		default:
			return nil, fmt.Errorf("%s: key %q: want a value or a list of values", at, name)
		}
		for _, e := range s.entries {
			if err := checkFileSecret(name, e.value); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, e.line, err)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// fileEntry reads one list entry: a value, or (at the top level) a
// mapping of "value" and the keys that apply to it.
func fileEntry(fs *flag.FlagSet, path, name string, item *yaml.Node, top bool) (settingEntry, error) {
	at := fmt.Sprintf("%s:%d", path, item.Line)
	switch {
	case item.Kind == yaml.ScalarNode && item.Tag != "!!null":
		return settingEntry{value: item.Value, line: item.Line}, nil
	case item.Kind == yaml.MappingNode && top:
		var value *yaml.Node
		rest := &yaml.Node{Kind: yaml.MappingNode}
		for i := 0; i+1 < len(item.Content); i += 2 {
			if item.Content[i].Value == "value" {
				value = item.Content[i+1]
				continue
			}
			rest.Content = append(rest.Content, item.Content[i], item.Content[i+1])
		}
		if value == nil || value.Kind != yaml.ScalarNode || value.Tag == "!!null" {
			return settingEntry{}, fmt.Errorf("%s: an entry of %q written as a mapping needs a \"value\"", at, name)
		}
		nested, err := fileSettings(fs, path, rest, false)
		if err != nil {
			return settingEntry{}, err
		}
		return settingEntry{value: value.Value, nested: nested, line: value.Line}, nil
	}
	return settingEntry{}, fmt.Errorf("%s: an entry of %q must be a value", at, name)
}

// print writes the effective configuration as YAML, every key with its
// source in a comment and secrets redacted.
func (v *configView) print(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# mcpauth %s: the effective configuration; after each key, where its value comes from.\n", v.command)
	for _, s := range v.keys {
		switch {
		case !s.repeatable:
			value := ""
			if len(s.entries) > 0 {
				value = s.entries[len(s.entries)-1].value
			}
			fmt.Fprintf(&b, "%s: %s  # %s\n", s.name, yamlString(redactSecret(s.name, value)), s.source)
		case len(s.entries) == 0:
			fmt.Fprintf(&b, "%s: []  # %s\n", s.name, s.source)
		default:
			fmt.Fprintf(&b, "%s:  # %s\n", s.name, s.source)
			for _, e := range s.entries {
				if len(e.nested) == 0 {
					fmt.Fprintf(&b, "  - %s\n", yamlString(redactSecret(s.name, e.value)))
					continue
				}
				fmt.Fprintf(&b, "  - value: %s\n", yamlString(redactSecret(s.name, e.value)))
				for _, n := range e.nested {
					fmt.Fprintf(&b, "    %s: [%s]\n", n.name, strings.Join(mapSlice(n.values(), func(x string) string {
						return yamlString(redactSecret(n.name, x))
					}), ", "))
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// yamlString quotes s as a YAML (and JSON) string.
func yamlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func mapSlice(in []string, f func(string) string) []string {
	out := slices.Clone(in)
	for i := range out {
		out[i] = f(out[i])
	}
	return out
}
