// Package golden compares test output with golden files in a package's
// testdata directory, and rewrites them when the test binary runs with
// -update (STYLE.md rule 14), as golang/go's go/printer tests do. It is
// test support: only _test.go files may import it. Importing it defines
// the -update flag, so a test package that imports it must not define
// one itself.
//
//	rec := httptest.NewRecorder()
//	handler.ServeHTTP(rec, req)
//	golden.Check(t, "no-token.golden", golden.DumpResponse(rec))
package golden
