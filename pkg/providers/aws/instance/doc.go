// Package instance launches EC2 instances with CreateFleet and describes, tags and terminates them. The offering
// choice (SelectOverrides) and the request (FleetInput) are pure; Provider does the calls, records refused
// offerings in the unavailable-offerings cache and only ever acts on instances carrying this cluster's identity.
package instance
