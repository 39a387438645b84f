package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/baton-run/baton/pkg/cli"
	"github.com/baton-run/baton/pkg/scaffold"
)

// initProject is baton init DIR.
func initProject(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	var o scaffold.Options
	fs.StringVar(&o.Module, "module", "", "the project's module path (default: the directory's name)")
	fs.StringVar(&o.Version, "version", "", "the baton version go.mod requires (default: this baton's, as go install or go run pkg@version built it)")
	fs.StringVar(&o.Replace, "replace", "", "a baton checkout go.mod replaces the module with")
	fs.StringVar(&o.Agent, "agent", "", `the agent's name (default "assistant")`)
	if help, err := parseLocal(fs, args, out); help || err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: baton init [-module PATH] [-replace DIR] [-agent NAME] DIR")
	}
	if o.Replace != "" {
		abs, err := filepath.Abs(o.Replace)
		if err != nil {
			return err
		}
		o.Replace = abs
	}
	if o.Version == "" {
		o.Version = ownVersion()
	}
	if o.Version == "" && o.Replace == "" {
		return errors.New("init: this baton has no release version (built from a checkout): pass -version vX.Y.Z or -replace DIR")
	}
	dir := fs.Arg(0)
	if err := scaffold.Write(dir, o); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote a baton project in %s\n  cd %s && go mod tidy\n  go test ./...\n  go run ./cmd/dev\n  make deploy\n", dir, dir)
	return nil
}

// ownVersion is the version of the baton module this binary was built
// from, or "" for a checkout's build ("(devel)").
func ownVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || !strings.HasPrefix(bi.Main.Version, "v") {
		return ""
	}
	return bi.Main.Version
}

// templateCmd is baton template: print, diff (--diff) or rewrite (-w) the
// files a project derives from baton's, in dir.
func templateCmd(args []string, dir string, out io.Writer) error {
	fs := flag.NewFlagSet("template", flag.ContinueOnError)
	diff := fs.Bool("diff", false, "report which derived files differ from this baton's, with the first differing line")
	write := fs.Bool("w", false, "rewrite template.yaml and Makefile with this baton's")
	fs.StringVar(&dir, "C", dir, "the project's directory")
	if help, err := parseLocal(fs, args, out); help || err != nil {
		return err
	}
	derived := scaffold.Derived()
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range derived {
			if !yield(n) {
				return
			}
		}
	})
	var differ []string
	for _, n := range names {
		want, p := derived[n], filepath.Join(dir, n)
		switch {
		case *write:
			if err := os.WriteFile(p, want, 0o644); err != nil {
				return fmt.Errorf("template: %w", err)
			}
			fmt.Fprintf(out, "wrote %s\n", p)
		case *diff:
			have, err := os.ReadFile(p)
			if err != nil {
				return fmt.Errorf("template: %w", err)
			}
			if !bytes.Equal(have, want) {
				differ = append(differ, n)
				fmt.Fprintf(out, "%s differs from this baton's: %s\n", n, firstDiff(have, want))
			}
		default:
			fmt.Fprintf(out, "==> %s <==\n%s\n", n, want)
		}
	}
	if len(differ) > 0 {
		return fmt.Errorf("template: %s out of date; baton template -w rewrites them", strings.Join(differ, ", "))
	}
	return nil
}

// firstDiff names the first line where have and want differ.
func firstDiff(have, want []byte) string {
	h, w := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(h), len(w)) {
		var a, b string
		if i < len(h) {
			a = h[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: have %q, want %q", i+1, a, b)
		}
	}
	return "same lines"
}

// parseLocal parses a local command's flags. Asked for help, it prints the
// command's help and its flags to out and reports help, so the command
// does nothing else.
func parseLocal(fs *flag.FlagSet, args []string, out io.Writer) (help bool, err error) {
	fs.SetOutput(out)
	fs.Usage = func() {
		h, _ := cli.Help(fs.Name())
		fmt.Fprint(out, h)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	return false, nil
}
