package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

func printJSON(w io.Writer, raw json.RawMessage) {
	fmt.Fprintln(w, strings.TrimSpace(string(raw)))
}

func newFaultCommand(c *client) *cobra.Command {
	cmd := &cobra.Command{Use: "fault", Short: "Inject or clear faults (capacity, throttling, latency, consistency, no Node, subnet IPs)"}

	var cf awssim.CapacityFault
	capacity := &cobra.Command{
		Use:   "capacity",
		Short: "Make launches fail with InsufficientInstanceCapacity (or --code) for matching (type, zone, capacity type)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cf.CapacityType != "" && cf.CapacityType != "*" && cf.CapacityType != "spot" && cf.CapacityType != "on-demand" {
				return fmt.Errorf("--capacity-type %q must be spot, on-demand or *", cf.CapacityType)
			}
			var out json.RawMessage
			if err := c.do("POST", "faults/capacity", cf, &out); err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), out)
			return nil
		},
	}
	capacity.Flags().StringVar(&cf.InstanceType, "type", "*", "instance type or glob (m5.*)")
	capacity.Flags().StringVar(&cf.Zone, "zone", "*", "zone or glob")
	capacity.Flags().StringVar(&cf.CapacityType, "capacity-type", "*", "spot, on-demand or *")
	capacity.Flags().StringVar(&cf.Code, "code", "", "fleet error code (default InsufficientInstanceCapacity)")
	capacity.Flags().IntVar(&cf.Available, "available", 0, "matching pools still launch this many instances before the fault applies (a fleet for more is partly fulfilled)")

	var tf awssim.ThrottleFault
	throttle := &cobra.Command{
		Use:   "throttle",
		Short: "Answer a fraction of AWS calls with the service's throttling error (RequestLimitExceeded for EC2)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tf.Rate < 0 || tf.Rate > 1 {
				return fmt.Errorf("--rate %v must be between 0 and 1", tf.Rate)
			}
			var out json.RawMessage
			if err := c.do("POST", "faults/throttle", tf, &out); err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), out)
			return nil
		},
	}
	throttle.Flags().Float64Var(&tf.Rate, "rate", 0, "fraction of calls throttled, 0..1")
	throttle.Flags().StringSliceVar(&tf.Actions, "actions", nil, "only these actions (e.g. CreateFleet,DescribeInstances); default all")
	throttle.Flags().StringSliceVar(&tf.Services, "services", nil, "only calls to these services (ec2, iam, ssm, pricing, sqs, eks, events; STS counts as iam); default all")

	latency := &cobra.Command{
		Use:   "latency DURATION",
		Short: "Add latency to every AWS call (0 removes it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := time.ParseDuration(args[0])
			if err != nil || d < 0 {
				return fmt.Errorf("latency %q must be a non-negative duration like 200ms", args[0])
			}
			var out json.RawMessage
			if err := c.do("POST", "faults/latency", map[string]awssim.Duration{"latency": awssim.Duration(d)}, &out); err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), out)
			return nil
		},
	}

	consistency := &cobra.Command{
		Use:   "consistency DURATION",
		Short: "DescribeInstances by id answers InvalidInstanceID.NotFound for instances younger than DURATION (0 turns it off)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := time.ParseDuration(args[0])
			if err != nil || d < 0 {
				return fmt.Errorf("consistency %q must be a non-negative duration like 2s", args[0])
			}
			var out json.RawMessage
			if err := c.do("POST", "faults/consistency", map[string]awssim.Duration{"notFoundAfterLaunch": awssim.Duration(d)}, &out); err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), out)
			return nil
		},
	}

	var nf awssim.NoNodeFault
	var nfTags []string
	var nfClear bool
	noNode := &cobra.Command{
		Use:   "no-node",
		Short: "Matching instances run but never get a Node (registration never happens); --clear removes these faults",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out json.RawMessage
			if nfClear {
				if err := c.do("DELETE", "faults/no-node", nil, &out); err != nil {
					return err
				}
				printJSON(cmd.OutOrStdout(), out)
				return nil
			}
			if nf.Count < 0 {
				return fmt.Errorf("--count %d must not be negative", nf.Count)
			}
			for _, kv := range nfTags {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("--tag %q must be key=value (value may be * or a glob)", kv)
				}
				if nf.Tags == nil {
					nf.Tags = map[string]string{}
				}
				nf.Tags[k] = v
			}
			if err := c.do("POST", "faults/no-node", nf, &out); err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), out)
			return nil
		},
	}
	noNode.Flags().StringVar(&nf.NodePool, "nodepool", "", "only instances tagged karpenter.sh/nodepool with this value (glob); default any")
	noNode.Flags().StringArrayVar(&nfTags, "tag", nil, "only instances with this tag, key=value (value * or a glob); repeatable")
	noNode.Flags().IntVar(&nf.Count, "count", 0, "hold back only the next N matching instances (0: all until cleared)")
	noNode.Flags().BoolVar(&nfClear, "clear", false, "remove every no-node fault (instances already held back stay without a Node)")

	var rh awssim.RebootHangFault
	var rhClear bool
	rebootHang := &cobra.Command{
		Use:   "reboot-hang",
		Short: "Reboots of matching instances never end: their Nodes stay NotReady; --clear removes these faults",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out json.RawMessage
			if rhClear {
				if err := c.do("DELETE", "faults/reboot-hang", nil, &out); err != nil {
					return err
				}
				printJSON(cmd.OutOrStdout(), out)
				return nil
			}
			if rh.Count < 0 {
				return fmt.Errorf("--count %d must not be negative", rh.Count)
			}
			if err := c.do("POST", "faults/reboot-hang", rh, &out); err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), out)
			return nil
		},
	}
	rebootHang.Flags().StringVar(&rh.NodePool, "nodepool", "", "only instances tagged karpenter.sh/nodepool with this value (glob); default any")
	rebootHang.Flags().IntVar(&rh.Count, "count", 0, "only the next N reboots of matching instances (0: all until cleared)")
	rebootHang.Flags().BoolVar(&rhClear, "clear", false, "remove every reboot-hang fault (reboots already hanging stay so)")

	var ips awssim.SubnetIPRequest
	subnetIPs := &cobra.Command{
		Use:   "subnet-ips",
		Short: "Cap the free IP addresses of subnets (0 exhausts them, -1 removes the cap)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out json.RawMessage
			if err := c.do("POST", "faults/subnet-ips", ips, &out); err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), out)
			return nil
		},
	}
	subnetIPs.Flags().StringVar(&ips.Zone, "zone", "", "subnets of this zone")
	subnetIPs.Flags().StringVar(&ips.SubnetID, "subnet", "", "this subnet id")
	subnetIPs.Flags().StringVar(&ips.Account, "account", "", "account (access key id); default all")
	subnetIPs.Flags().IntVar(&ips.Available, "available", 0, "free addresses left")

	clear := &cobra.Command{
		Use: "clear", Short: "Remove every fault", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out json.RawMessage
			if err := c.do("DELETE", "faults", nil, &out); err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), out)
			return nil
		},
	}
	show := &cobra.Command{
		Use: "show", Short: "Print the current faults", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out json.RawMessage
			if err := c.do("GET", "faults", nil, &out); err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), out)
			return nil
		},
	}
	cmd.AddCommand(capacity, throttle, latency, consistency, noNode, rebootHang, subnetIPs, clear, show)
	return cmd
}

func newSQSCommand(c *client) *cobra.Command {
	cmd := &cobra.Command{Use: "sqs", Short: "Send EventBridge-shaped events into a simulated SQS queue"}
	var req awssim.EventRequest
	var start, terminateAfter string
	send := &cobra.Command{
		Use:   "send KIND",
		Short: "Send spot-interruption, rebalance, health, state-change or capacity-reservation-interruption for --instance",
		Args:  cobra.ExactArgs(1),
		ValidArgs: []string{awssim.EventSpotInterruption, awssim.EventRebalance, awssim.EventHealth, awssim.EventStateChange,
			awssim.EventCapacityReservationInterruption},
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Kind = args[0]
			switch req.Kind {
			case awssim.EventSpotInterruption, awssim.EventRebalance, awssim.EventHealth, awssim.EventStateChange,
				awssim.EventCapacityReservationInterruption:
			default:
				return fmt.Errorf("event kind %q must be spot-interruption, rebalance, health, state-change or capacity-reservation-interruption", req.Kind)
			}
			if req.InstanceID == "" {
				return fmt.Errorf("--instance is required")
			}
			if start != "" {
				d, err := time.ParseDuration(start)
				if err != nil {
					t, terr := time.Parse(time.RFC3339, start)
					if terr != nil {
						return fmt.Errorf("--start %q must be a duration from now (1h) or an RFC 3339 time", start)
					}
					req.StartTime = &t
				} else {
					t := time.Now().Add(d)
					req.StartTime = &t
				}
			}
			if terminateAfter != "" {
				d, err := time.ParseDuration(terminateAfter)
				if err != nil {
					return fmt.Errorf("--terminate-after %q: %w", terminateAfter, err)
				}
				ad := awssim.Duration(d)
				req.TerminateAfter = &ad
			}
			var out json.RawMessage
			if err := c.do("POST", "events", req, &out); err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), out)
			return nil
		},
	}
	f := send.Flags()
	f.StringVar(&req.InstanceID, "instance", "", "instance id the event is about")
	f.StringVar(&req.Queue, "queue", "", "queue name (default: the cluster name)")
	f.StringVar(&req.Account, "account", "", "account (access key id) owning the queue (default: the instance's)")
	f.StringVar(&req.State, "state", "", "state-change: the state (default: the instance's)")
	f.StringVar(&start, "start", "", "health: scheduled change start, a duration from now or RFC 3339 (default 1h)")
	f.StringVar(&terminateAfter, "terminate-after", "", "terminate the instance after this delay (spot-interruption and capacity-reservation-interruption default 2m; -1s never)")
	cmd.AddCommand(send)
	return cmd
}

func newInstancesCommand(c *client) *cobra.Command {
	var showTags bool
	cmd := &cobra.Command{
		Use:   "instances",
		Short: "List simulated instances",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []awssim.InstanceInfo
			if err := c.do("GET", "instances", nil, &list); err != nil {
				return err
			}
			writeInstances(cmd.OutOrStdout(), list, showTags)
			return nil
		},
	}
	cmd.Flags().BoolVar(&showTags, "tags", false, "show tags")
	return cmd
}

func writeInstances(out io.Writer, list []awssim.InstanceInfo, showTags bool) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	header := "ACCOUNT\tINSTANCE\tTYPE\tZONE\tCAPACITY\tSTATE\tIP\tNODE\tAGE"
	if showTags {
		header += "\tTAGS"
	}
	fmt.Fprintln(w, header)
	now := time.Now()
	for _, i := range list {
		node := "-"
		if i.NodeCreated {
			node = i.NodeName
			if !i.NodeReady {
				node += " (uninitialized)"
			}
		}
		if i.UserDataError != "" {
			node += " [bad user data]"
		}
		if i.NodeWithheld {
			node += " [no Node: fault]"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", i.Account, i.ID, i.Type, i.Zone, i.CapacityType, i.State,
			i.PrivateIP, node, now.Sub(i.LaunchTime).Round(time.Second))
		if showTags {
			var kv []string
			for k, v := range i.Tags {
				kv = append(kv, k+"="+v)
			}
			sort.Strings(kv)
			line += "\t" + strings.Join(kv, ",")
		}
		fmt.Fprintln(w, line)
	}
	_ = w.Flush()
}

func newTerminateCommand(c *client) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "terminate INSTANCE_ID...",
		Short: "Terminate instances out of band (as if AWS did it)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, id := range args {
				if err := c.do("POST", "instances/"+id+"/terminate", map[string]string{"reason": reason}, nil); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "terminating", id)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "state reason shown by DescribeInstances")
	return cmd
}

func newStateCommand(c *client) *cobra.Command {
	return &cobra.Command{
		Use:   "state",
		Short: "Print the simulator's state as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out json.RawMessage
			if err := c.do("GET", "state", nil, &out); err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), out)
			return nil
		},
	}
}

func newReservationCommand(c *client) *cobra.Command {
	cmd := &cobra.Command{Use: "reservation", Short: "Manage simulated capacity reservations"}
	var req awssim.CapacityReservationRequest
	var endIn time.Duration
	create := &cobra.Command{
		Use: "create", Short: "Create an active capacity reservation (On-Demand Capacity Reservation or Capacity Block)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if endIn > 0 {
				end := time.Now().Add(endIn).UTC()
				req.EndTime = &end
			}
			var out map[string]string
			if err := c.do("POST", "capacity-reservations", req, &out); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), out["capacityReservationId"])
			return nil
		},
	}
	create.Flags().StringVar(&req.InstanceType, "type", "", "instance type")
	create.Flags().StringVar(&req.Zone, "zone", "", "zone")
	create.Flags().IntVar(&req.Count, "count", 1, "instances reserved")
	create.Flags().StringVar(&req.Account, "account", "", "account (access key id); needed when several exist")
	create.Flags().StringToStringVar(&req.Tags, "tag", nil, "tags of the reservation (key=value, repeatable)")
	create.Flags().StringVar(&req.ReservationType, "reservation-type", "default", "default or capacity-block")
	create.Flags().StringVar(&req.InstanceMatchCriteria, "match", "targeted", "instance match criteria: targeted or open")
	create.Flags().StringVar(&req.OwnerID, "owner", "", "owning account number (default: the account's own)")
	create.Flags().BoolVar(&req.Interruptible, "interruptible", false, "the reservation's capacity may be reclaimed")
	create.Flags().DurationVar(&endIn, "end-in", 0, "the reservation ends this long from now (required for capacity-block)")
	cmd.AddCommand(create)
	return cmd
}

func newAMICommand(c *client) *cobra.Command {
	cmd := &cobra.Command{Use: "ami", Short: "Manage simulated AMIs"}
	cmd.AddCommand(&cobra.Command{
		Use: "release", Short: "Publish new AMIs and point the SSM latest parameters at them (drift)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.do("POST", "amis/release", nil, nil); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "released new AMIs")
			return nil
		},
	})
	return cmd
}

func newSpotPriceCommand(c *client) *cobra.Command {
	cmd := &cobra.Command{Use: "spot-price", Short: "Change simulated spot prices"}
	var req awssim.SpotPriceRequest
	set := &cobra.Command{
		Use: "set", Short: "Set the spot price of --type in --zone (--price 0 restores the catalog price)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out json.RawMessage
			if err := c.do("POST", "spot-prices", req, &out); err != nil {
				return err
			}
			printJSON(cmd.OutOrStdout(), out)
			return nil
		},
	}
	set.Flags().StringVar(&req.InstanceType, "type", "", "instance type")
	set.Flags().StringVar(&req.Zone, "zone", "", "zone")
	set.Flags().Float64Var(&req.Price, "price", 0, "hourly USD price")
	cmd.AddCommand(set)
	return cmd
}
