// Package reducer defines baton's typed session facts and folds them into
// session state. Reduce and State.Apply are pure: they read no clock and do
// no I/O, and they reject an illegal sequence of facts with a *TransitionError
// instead of guessing.
package reducer
