// Package reboot carries out the node reboots node repair asks for (the AWS gate RebootForRepair): a NodeClaim with
// a true Rebooting condition has its Node fenced, its instance rebooted through the cloud provider, and its Node
// watched until it comes back with a new boot ID; a reboot that fails replaces the node. Decisions are in
// pkg/reboot.
package reboot
