package cli

import (
	"encoding/json"
	"fmt"
	"runtime/debug"

	"gopkg.in/yaml.v3"
)

// Output formats of -o.
const (
	OutputTable = "table"
	OutputJSON  = "json"
	OutputYAML  = "yaml"
)

// outputFlag adds -o (and --json, its alias for -o json) to c.
func (c *command) outputFlag() {
	c.fs.StringVar(&c.output, "o", OutputTable, "output format: table, json or yaml")
}

// format is the output format c's flags ask for.
func (c *command) format() (string, error) {
	if c.json {
		return OutputJSON, nil
	}
	switch c.output {
	case OutputTable, OutputJSON, OutputYAML:
		return c.output, nil
	}
	return "", usagef("-o must be table, json or yaml, not %q", c.output)
}

// emit prints v as c's format asks: JSON, YAML (the JSON's fields), or the
// table that table prints.
func (e *env) emit(c *command, v any, table func() error) error {
	f, err := c.format()
	if err != nil {
		return err
	}
	switch f {
	case OutputJSON:
		return e.printJSON(v)
	case OutputYAML:
		return e.printYAML(v)
	}
	return table()
}

// printYAML prints v as YAML with its JSON field names.
func (e *env) printYAML(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	enc := yaml.NewEncoder(e.stdout)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return enc.Close()
}

// Version is the CLI's version as `baton --version` prints it: the module
// version it was built as, and the VCS revision when the build recorded
// one.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "baton (unknown version)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return fmt.Sprintf("baton %s %s", v, bi.GoVersion)
}
