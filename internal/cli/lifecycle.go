package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// export writes GET /sessions/{id}/export, indented, to stdout or to the
// file of -f: whole or not at all (a temporary file renamed into place).
func (e *env) export(ctx context.Context, args []string) error {
	c := e.flags("export", false)
	var file string
	c.fs.StringVar(&file, "f", "", "write the bundle to this file instead of stdout")
	pos, err := c.parse(args, 1, false, "SESSION")
	if err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	raw, err := cl.Export(ctx, pos[0])
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return fmt.Errorf("the export is not JSON: %w", err)
	}
	b.WriteByte('\n')
	if file == "" {
		_, err := e.stdout.Write(b.Bytes())
		return err
	}
	if err := writeWhole(file, b.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "exported session %s to %s\n", pos[0], file)
	return nil
}

// writeWhole writes data to path through a temporary file in the same
// directory, so that path holds all of it or is left as it was.
func writeWhole(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".baton-export-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // after the rename, nothing is there
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// remove is DELETE /sessions/{id}.
func (e *env) remove(ctx context.Context, args []string) error {
	c := e.flags("delete", false)
	pos, err := c.parse(args, 1, false, "SESSION")
	if err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	if err := cl.DeleteSession(ctx, pos[0]); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "deleted session %s\n", pos[0])
	return nil
}
