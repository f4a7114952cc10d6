package deps

// NewerVersion is newer, for the tests of package deps_test.
var NewerVersion = newer
