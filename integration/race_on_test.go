//go:build race

package integration

// raceBuild reports whether this test binary was built with -race; the
// example binary the tests start is built the same way, so that it reuses
// the build cache of the test's own dependencies.
const raceBuild = true
