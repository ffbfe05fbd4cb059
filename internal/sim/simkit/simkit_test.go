package simkit

import (
	"context"
	"strings"
	"testing"
)

type namedKit string

func (k namedKit) Name() string { return string(k) }

func (namedKit) Start(context.Context, VendorOptions) (Vendor, error) { return nil, nil }

func TestCatalogueFindsKitsByNameAndRefusesTwins(t *testing.T) {
	saved := kits
	t.Cleanup(func() { kits = saved })
	kits = nil
	Register(namedKit("alpha"))
	Register(namedKit("beta"))
	if k, err := Find("beta"); err != nil || k.Name() != "beta" {
		t.Fatalf("Find(beta) = %v, %v", k, err)
	}
	_, err := Find("gamma")
	if err == nil || !strings.Contains(err.Error(), `"gamma"`) || !strings.Contains(err.Error(), "alpha, beta") {
		t.Fatalf("Find(gamma) error %v, want it to name the kits there are", err)
	}
	if got := strings.Join(Names(), ","); got != "alpha,beta" {
		t.Fatalf("Names %q", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a second kit named alpha was registered")
		}
	}()
	Register(namedKit("alpha"))
}

func TestRefusalMatches(t *testing.T) {
	want := Refusal{Status: 101, Reason: "already used"}
	for _, tc := range []struct {
		got  Refusal
		want bool
	}{
		{Refusal{Status: 101, Reason: "stream token already used"}, true},
		{Refusal{Status: 101}, false},
		{Refusal{Status: 403, Reason: "already used"}, false},
	} {
		if got := want.Matches(tc.got); got != tc.want {
			t.Errorf("Matches(%+v) = %t, want %t", tc.got, got, tc.want)
		}
	}
}

func TestToolKitsAreFoundButLeftOutOfTheScenarios(t *testing.T) {
	saved, savedTool := kits, toolOnly
	t.Cleanup(func() { kits, toolOnly = saved, savedTool })
	kits, toolOnly = nil, map[string]bool{}
	Register(namedKit("alpha"))
	RegisterTool(namedKit("beta"))
	if k, err := Find("beta"); err != nil || k.Name() != "beta" {
		t.Fatalf("Find(beta) = %v, %v", k, err)
	}
	if got := strings.Join(Names(), ","); got != "alpha,beta" {
		t.Fatalf("Names %q, want both kits", got)
	}
	var all []string
	for _, k := range All() {
		all = append(all, k.Name())
	}
	if got := strings.Join(all, ","); got != "alpha" {
		t.Fatalf("All %q, want only the scenario kit alpha", got)
	}
}
