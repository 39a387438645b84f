// Package clock is the one clock type of baton's engine: the runner, the
// worker, the tick and the stores read the time through a Clock, so a test
// moves a Fake forward instead of waiting on the wall clock for a lease,
// an expiry or a budget.
package clock
