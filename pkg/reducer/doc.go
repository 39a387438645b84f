// Package reducer defines baton's typed session facts and folds them into
// session state, and decides from that state what a session needs next
// (State.Next). Reduce, State.Apply and State.Next are pure: they read no
// clock and do no I/O, and Apply rejects an illegal sequence of facts with a
// *TransitionError instead of guessing.
package reducer
