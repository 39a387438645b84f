package ids

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// New returns prefix_<13 hex digits of unix ms><16 hex random digits>.
func New(prefix string) string {
	var b [8]byte
	// Since Go 1.24 crypto/rand.Read never returns an error.
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s_%013x%s", prefix, time.Now().UnixMilli(), hex.EncodeToString(b[:]))
}
