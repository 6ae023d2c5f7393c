//go:build !race

package exampleproc

// Race reports whether this binary was built with -race; Binary builds
// the example the same way, so that it reuses the build cache of the
// test's own dependencies.
const Race = false
