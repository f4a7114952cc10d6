// Package fake is an in-memory CloudProvider for tests: configurable instance types and offerings, capacity
// errors per offering, injected errors per method, and a record of every instance created and deleted.
// It never talks to a cloud and is never used by the controller binary.
package fake
