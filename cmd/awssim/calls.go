package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

// newCallsCommand prints the call log: the mutating EC2 and IAM calls, who made them and what they named.
func newCallsCommand(c *client) *cobra.Command {
	var caller string
	var tagKeys []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "calls",
		Short: "Print the mutating EC2 and IAM calls the simulator answered, with their caller and the resources they named",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var log awssim.CallLog
			if err := c.do("GET", "calls", nil, &log); err != nil {
				return err
			}
			var recs []awssim.CallRecord
			for _, r := range log.Records {
				if caller == "" || r.Caller == caller {
					recs = append(recs, r)
				}
			}
			if asJSON {
				b, err := json.MarshalIndent(awssim.CallLog{Records: recs, Dropped: log.Dropped}, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SEQ\tTIME\tCALLER\tACTION\tERROR\tRESOURCES")
			for _, r := range recs {
				var res []string
				for _, x := range r.Resources {
					res = append(res, x.ARN[strings.LastIndex(x.ARN, ":")+1:]+tagSuffix(x.Tags, tagKeys))
				}
				fmt.Fprintf(w, "%d\t%s\t%s\t%s:%s\t%s\t%s\n", r.Seq, r.Time.Format("15:04:05.000"), r.Caller, r.Service, r.Action,
					dash(r.Error), strings.Join(res, " "))
			}
			if log.Dropped > 0 {
				fmt.Fprintf(w, "(%d older records dropped)\n", log.Dropped)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&caller, "caller", "", "only calls by this caller (the SDK app id, AWS_SDK_UA_APP_ID, or the access key id)")
	cmd.Flags().StringSliceVar(&tagKeys, "tag", []string{"dovetail.sh/cluster-uid"}, "resource tags to show next to each resource")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the records as JSON")
	return cmd
}

func tagSuffix(tags map[string]string, keys []string) string {
	var parts []string
	for _, k := range keys {
		if v, ok := tags[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return ""
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
