// Package test holds builders for test objects and helpers that start a real API server (envtest) for tests.
// Each area keeps its builders in its own file.
package test
