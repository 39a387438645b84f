package reducer

// What the package's external tests reach that only the package itself
// uses.

// Fault is Cause.fault.
func (c Cause) Fault() bool { return c.fault() }

// Reached says which cap u has reached ("" for none), as a sentence naming
// the limit, the value and the cap.
func (c Caps) Reached(u Usage) string {
	if l := c.Reach("", u); l != nil {
		return l.Reaches()
	}
	return ""
}
