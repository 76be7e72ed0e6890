package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestSimThesis1(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Sim(context.Background(), []string{"--workload", "thesis-1", "--json"}, &out, &errb); code != 0 {
		if strings.Contains(errb.String(), "not found") {
			t.Skip(errb.String())
		}
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct {
		Defaults string
		Modes    []struct {
			Mode    string
			AllDone bool `json:"all_calibration_done"`
			Nominal float64
			VsSlurm *json.RawMessage `json:"vs_slurm"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Modes) != 4 || rep.Modes[0].Mode != "slurm" || !strings.Contains(rep.Defaults, "150 tasks per job") {
		t.Fatalf("report %+v", rep)
	}
	for _, m := range rep.Modes {
		if !m.AllDone || m.Nominal <= 0 || (m.Mode != "slurm") != (m.VsSlurm != nil) {
			t.Errorf("mode %+v", m)
		}
	}
	out.Reset()
	if code := Sim(context.Background(), []string{"--workload", "thesis-2", "--mode", "fair"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Table 5.2") || !strings.Contains(out.String(), "defaults: 150 tasks per job") {
		t.Errorf("text report:\n%s", out.String())
	}
}
