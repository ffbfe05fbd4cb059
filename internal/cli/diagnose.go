package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/handset-voice/handset/internal/obs"
)

// runDiagnose names the first broken stage of a call and the fix. It fails (exit 1) when
// it finds one, so scripts can tell a broken call from a healthy one.
func runDiagnose(_ context.Context, env Env, args []string) error {
	call, asJSON, err := openCall("diagnose", "Names the first broken stage of a call and the fix.", env, args)
	if err != nil {
		return err
	}
	v := obs.Diagnose(call.events)
	v.CallID = call.id
	if asJSON {
		if err := printJSONTo(env.Stdout, v); err != nil {
			return err
		}
	} else {
		t := obs.Trace(call.events)
		t.CallID, t.Journal = call.id, call.path
		printVerdict(env.Stdout, t, v, newStatusMarks(env))
	}
	if v.Stage != "" {
		which := call.id
		if which == "" {
			which = call.path
		}
		return fmt.Errorf("call %s is broken at the %s stage", which, v.Stage)
	}
	return nil
}

// printVerdict prints the broken stage (or the all-clear), the fix, the evidence and the
// warnings.
func printVerdict(w io.Writer, t obs.CallTrace, v obs.Verdict, m statusMarks) {
	printCallHeader(w, t)
	fmt.Fprintln(w)
	if v.Stage == "" {
		fmt.Fprintf(w, "%s %s\n", m.of(obs.StatusOK), v.Problem)
		for _, e := range v.Evidence {
			fmt.Fprintf(w, "    %s\n", e)
		}
	} else {
		fmt.Fprintf(w, "%s %s: %s\n", m.of(obs.StatusFailed), v.Stage, v.Problem)
		fmt.Fprintf(w, "  fix: %s\n", v.Fix)
		if len(v.Evidence) > 0 {
			fmt.Fprintln(w, "  from the journal:")
			for _, e := range v.Evidence {
				fmt.Fprintf(w, "    %s\n", e)
			}
		}
	}
	for _, x := range v.Warnings {
		where := ""
		if x.Stage != "" {
			where = x.Stage + ": "
		}
		fmt.Fprintf(w, "\n%s %s%s\n", m.of(obs.StatusWarn), where, x.Problem)
		if x.Fix != "" {
			fmt.Fprintf(w, "  fix: %s\n", x.Fix)
		}
	}
}
