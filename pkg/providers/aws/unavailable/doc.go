// Package unavailable remembers offerings (instance type, zone, capacity type) and subnets that EC2 recently
// refused for lack of capacity or addresses, so launches skip them for a while (3 minutes by default). Time comes
// from an injected clock.
package unavailable
