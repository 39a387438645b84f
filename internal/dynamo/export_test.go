package dynamo

// TestEnv is the package's emulator and shared table, for the tests of
// package dynamo_test.
var TestEnv = &testEnv
