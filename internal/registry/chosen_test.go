package registry_test

import (
	"testing"

	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
)

// testCarrier is configured when <NAME>_ID and <NAME>_TOKEN are set, started when either is.
func testCarrier(name string) registry.Carrier {
	id, token := name+"_ID", name+"_TOKEN"
	return registry.Carrier{About: registry.About{Name: name},
		Configured: func(s registry.Settings) bool { return s.Value(id) != "" && s.Value(token) != "" },
		Started:    func(s registry.Settings) bool { return s.Value(id) != "" || s.Value(token) != "" },
	}
}

func TestChosenCarrier(t *testing.T) {
	registry.Register(testCarrier("CHOSEN_A"), testCarrier("CHOSEN_B"), testCarrier("CHOSEN_C"))
	for _, tt := range []struct {
		name     string
		settings registrytest.Settings
		want     string
	}{
		{"nothing set: the catalogue's first", registrytest.Settings{}, "CHOSEN_A"},
		{"one begun", registrytest.Settings{"CHOSEN_B_ID": "x"}, "CHOSEN_B"},
		{"configured beats begun", registrytest.Settings{"CHOSEN_B_ID": "x", "CHOSEN_C_ID": "x", "CHOSEN_C_TOKEN": "y"}, "CHOSEN_C"},
		{"the first configured", registrytest.Settings{"CHOSEN_B_ID": "x", "CHOSEN_B_TOKEN": "y", "CHOSEN_C_ID": "x", "CHOSEN_C_TOKEN": "y"}, "CHOSEN_B"},
		{"the setting names one", registrytest.Settings{registry.CarrierChoice: "CHOSEN_C", "CHOSEN_B_ID": "x", "CHOSEN_B_TOKEN": "y"}, "CHOSEN_C"},
		{"the setting names none known", registrytest.Settings{registry.CarrierChoice: "nosuch", "CHOSEN_B_ID": "x", "CHOSEN_B_TOKEN": "y"}, "CHOSEN_B"},
	} {
		c, ok := registry.ChosenCarrier(tt.settings)
		if !ok || c.Name != tt.want {
			t.Errorf("%s: chose %q (%v), want %s", tt.name, c.Name, ok, tt.want)
		}
	}
}
