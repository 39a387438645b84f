package claims

import (
	"errors"
	"strings"
	"testing"
)

// TestKeysHoldNoControlCharacters: a key with NUL, a newline, a tab, DEL
// or a C1 control, or one that is not UTF-8, is a *KeyError (ErrInvalid);
// other Unicode is taken.
func TestKeysHoldNoControlCharacters(t *testing.T) {
	for _, k := range []string{"a\x00b", "orders/o-1\n", "a\tb", "a\x7f", "a\u0085b", "caf\xe9"} {
		var ke *KeyError
		if err := CheckKey(k); !errors.As(err, &ke) || !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckKey(%q) = %v, want a *KeyError", k, err)
		}
	}
	for _, k := range []string{"café/ünïcode", "a b", "日本/語"} {
		if err := CheckKey(k); err != nil {
			t.Errorf("CheckKey(%q) = %v", k, err)
		}
	}
}

// TestNamespacesAreBounded: a namespace or instance past MaxNamespace
// bytes (its space's DynamoDB partition key would near the 2,048-byte
// limit: 3,000 bytes passed it), or holding a control character or "#", is
// a *ClaimError naming which; at the bound it is taken.
func TestNamespacesAreBounded(t *testing.T) {
	long := strings.Repeat("n", 3000)
	for _, c := range []struct {
		claim Claim
		says  string
	}{
		{Claim{Namespace: long, Key: "k", Access: Write}, "namespace is 3000 bytes"},
		{Claim{Namespace: strings.Repeat("n", MaxNamespace+1), Key: "k", Access: Write}, "longer than the 256 allowed"},
		{Claim{Namespace: "orders", Instance: long, Key: "k", Access: Write}, "instance is 3000 bytes"},
		{Claim{Namespace: "or\x00ders", Key: "k", Access: Write}, "namespace holds a control character"},
		{Claim{Namespace: "orders\n", Key: "k", Access: Write}, "namespace holds a control character"},
		{Claim{Namespace: "orders", Instance: "a\nb", Key: "k", Access: Write}, "instance holds a control character"},
		{Claim{Namespace: "or#ders", Key: "k", Access: Write}, "namespace must not contain #"},
		{Claim{Namespace: "", Key: "k", Access: Write}, "namespace must be non-empty"},
		{Claim{Namespace: "caf\xe9", Key: "k", Access: Write}, "namespace is not valid UTF-8"},
	} {
		err := c.claim.Check()
		var ce *ClaimError
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.says) || len(err.Error()) > 400 {
			t.Errorf("Check(%.40q) = %.400v, want a short *ClaimError saying %q", c.claim.Namespace, err, c.says)
		}
	}
	ok := Claim{Namespace: strings.Repeat("n", MaxNamespace), Instance: strings.Repeat("i", MaxNamespace), Key: "k", Access: Write}
	if err := ok.Check(); err != nil {
		t.Fatalf("a namespace and instance at the bound: %v", err)
	}
	if err := CheckStatic([]Static{{Namespace: long, Field: "f", Access: Write}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("CheckStatic of a 3000-byte namespace: %v, want ErrInvalid", err)
	}
}
