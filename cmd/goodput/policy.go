package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/goodput-dev/goodput/policies"
)

func (a *app) newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "List, show and check policies"}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the built-in policies",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			for _, n := range policies.Names() {
				p, err := policies.Builtin(n)
				if err != nil {
					return inputError(err)
				}
				fmt.Fprintf(a.io.Out, "%-8s %s\n", n, p.Description)
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in policy's YAML (a starting point for your own)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			b, ok := policies.BuiltinText(args[0])
			if !ok {
				_, err := policies.Builtin(args[0])
				return inputError(err)
			}
			_, err := a.io.Out.Write(b)
			return err
		},
	}, &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a policy file (exit 4 with line:col on the first error)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			p, err := policies.Load(args[0])
			if err != nil {
				return inputError(err)
			}
			fmt.Fprintf(a.io.Out, "%s: ok (policy %s, %d gates)\n", args[0], p.Name, len(p.Gates))
			return nil
		},
	})
	return cmd
}
