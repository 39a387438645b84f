package auth

import (
	"encoding/json"
	"fmt"
)

// audience is a JWT aud claim: a string or an array of strings.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("auth: aud is neither a string nor strings: %w", err)
	}
	*a = many
	return nil
}
