package api

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: streams,
// watches and servers must all be stopped by their owners.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
