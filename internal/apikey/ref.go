package apikey

import (
	"errors"
	"fmt"
	"strings"
)

// Store names a secret store.
type Store string

// The stores a Ref may name.
const (
	SecretsManager Store = "secretsmanager"
	ParameterStore Store = "ssm"
)

// Ref names one key: a secret of Secrets Manager (ID its name or ARN) or a
// parameter of SSM Parameter Store (ID its name or ARN).
type Ref struct {
	Store Store
	ID    string
}

// String is the Ref as ParseRef reads it.
func (r Ref) String() string {
	if r.Store == ParameterStore && !strings.HasPrefix(r.ID, "arn:") {
		return "ssm:" + r.ID
	}
	return r.ID
}

// ParseRef reads a Ref (see the package documentation): an ARN of either
// store, ssm:<parameter name>, or a Secrets Manager secret's name.
func ParseRef(s string) (Ref, error) {
	switch {
	case s == "":
		return Ref{}, errors.New("empty secret reference")
	case strings.TrimSpace(s) != s || strings.ContainsAny(s, " \t\r\n"):
		return Ref{}, fmt.Errorf("secret reference %q has white space", s)
	case strings.HasPrefix(s, "ssm:"):
		name := strings.TrimPrefix(s, "ssm:")
		if name == "" {
			return Ref{}, fmt.Errorf("secret reference %q: want ssm:<parameter name>", s)
		}
		return Ref{Store: ParameterStore, ID: name}, nil
	case strings.HasPrefix(s, "arn:"):
		return parseARN(s)
	}
	return Ref{Store: SecretsManager, ID: s}, nil
}

// parseARN reads arn:<partition>:<service>:<region>:<account>:<resource>.
func parseARN(s string) (Ref, error) {
	parts := strings.SplitN(s, ":", 6)
	if len(parts) < 6 || parts[1] == "" || parts[5] == "" {
		return Ref{}, fmt.Errorf("secret reference %q: not an ARN", s)
	}
	switch res := parts[5]; parts[2] {
	case "secretsmanager":
		if !strings.HasPrefix(res, "secret:") || len(res) == len("secret:") {
			return Ref{}, fmt.Errorf("secret reference %q: want arn:...:secretsmanager:<region>:<account>:secret:<name>", s)
		}
		return Ref{Store: SecretsManager, ID: s}, nil
	case "ssm":
		if !strings.HasPrefix(res, "parameter/") || len(res) == len("parameter/") {
			return Ref{}, fmt.Errorf("secret reference %q: want arn:...:ssm:<region>:<account>:parameter/<name>", s)
		}
		return Ref{Store: ParameterStore, ID: s}, nil
	}
	return Ref{}, fmt.Errorf("secret reference %q: ARN of service %q: want secretsmanager or ssm", s, parts[2])
}
