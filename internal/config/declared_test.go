package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/registry"
)

// fakeline is a carrier of the tests' own: its settings reach the table only through its
// registry declaration, as a carrier added after this package was written.
var fakeline = registry.Carrier{
	About: registry.About{Name: "fakeline", Title: "Fakeline"},
	Declares: []registry.CarrierSetting{
		{Env: "FAKELINE_ACCOUNT", YAML: "account", Help: "Fakeline account id."},
		{Env: "FAKELINE_TOKEN", YAML: "token", Kind: registry.SettingSecret, Help: "Fakeline token."},
		{Env: "HANDSET_FAKELINE_URL", YAML: "api_url", Kind: registry.SettingURL, Default: "https://api.fakeline.example",
			Help: "Fakeline REST root."},
		{Env: "HANDSET_FAKELINE_CODEC", YAML: "codec", Kind: registry.SettingEnum, Default: "ulaw",
			Allowed: []string{"ulaw", "l16"}, Help: "Fakeline stream codec."},
	},
	RequireTogether: [][]string{{"FAKELINE_ACCOUNT", "FAKELINE_TOKEN"}},
	AccountSettings: "FAKELINE_ACCOUNT and FAKELINE_TOKEN",
	Configured: func(s registry.Settings) bool {
		return s.Value("FAKELINE_ACCOUNT") != "" && s.Value("FAKELINE_TOKEN") != ""
	},
}

// withCarriers stands cs in beside the registry's carriers for the test.
func withCarriers(t *testing.T, cs ...registry.Carrier) {
	t.Helper()
	old := declaringCarriers
	declaringCarriers = func() []registry.Carrier { return append(registry.All[registry.Carrier](), cs...) }
	t.Cleanup(func() { declaringCarriers = old })
}

func TestDeclaredSettingsJoinTheTable(t *testing.T) {
	before := Settings()
	withCarriers(t, fakeline)
	table := Settings()
	if len(table) != len(before)+len(fakeline.Declares) {
		t.Fatalf("the table has %d settings with fakeline, %d without: want %d more", len(table), len(before), len(fakeline.Declares))
	}
	want := map[string]struct {
		yaml string
		kind Kind
	}{
		"FAKELINE_ACCOUNT":       {"carriers.fakeline.account", KindString},
		"FAKELINE_TOKEN":         {"carriers.fakeline.token", KindSecret},
		"HANDSET_FAKELINE_URL":   {"carriers.fakeline.api_url", KindURL},
		"HANDSET_FAKELINE_CODEC": {"carriers.fakeline.codec", KindEnum},
	}
	for env, w := range want {
		s, ok := lookupSetting(table, env)
		if !ok {
			t.Errorf("%s is not in the table", env)
			continue
		}
		if s.YAML != w.yaml || s.Kind != w.kind {
			t.Errorf("%s: YAML %q kind %v, want %q %v", env, s.YAML, s.Kind, w.yaml, w.kind)
		}
		if !IsSetting(env) {
			t.Errorf("IsSetting(%s) is false", env)
		}
		if row := "| `" + env + "` | `" + w.yaml + "` |"; !strings.Contains(renderSettingsTable(), row) {
			t.Errorf("the docs table has no row %s", row)
		}
	}
	if !slices.Contains(setting(t, "HANDSET_CARRIER").Allowed, "fakeline") {
		t.Errorf("HANDSET_CARRIER does not take fakeline: %v", setting(t, "HANDSET_CARRIER").Allowed)
	}
}

// The table's own tests hold for a declared carrier's settings too.
func TestDeclaredSettingsPassTheTableTests(t *testing.T) {
	withCarriers(t, fakeline)
	t.Run("consistent", TestSettingTableIsConsistent)
	t.Run("every field one setting", TestEveryConfigFieldHasOneSetting)
	t.Run("every layer", TestEveryLayerReachesEverySetting)
	t.Run("enums", TestEveryEnumRejectsABadValue)
	t.Run("secrets never printed", TestSecretsNeverPrinted)
	t.Run("secrets missing", TestSecretDisplayMissing)
}

func TestDeclaredSettingsLoad(t *testing.T) {
	withCarriers(t, fakeline)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"handset.yaml": yamlLines("carriers:", "  fakeline:", "    account: from-yaml", "    codec: L16"),
		".env":         "FAKELINE_TOKEN=LEAKED-token\n",
	})
	c := mustLoad(t, LoadOptions{WorkDir: dir, Environ: []string{"HANDSET_FAKELINE_URL=https://proxy.example/fl/"}})
	for env, want := range map[string][2]string{
		"FAKELINE_ACCOUNT":       {"from-yaml", "handset.yaml"},
		"FAKELINE_TOKEN":         {"LEAKED-token", ".env"},
		"HANDSET_FAKELINE_URL":   {"https://proxy.example/fl", "environment"},
		"HANDSET_FAKELINE_CODEC": {"l16", "handset.yaml"},
	} {
		if got := c.Value(env); got != want[0] {
			t.Errorf("Value(%s) = %q, want %q", env, got, want[0])
		}
		if got := c.Source(env); !strings.Contains(got, want[1]) {
			t.Errorf("Source(%s) = %q, want it to name %s", env, got, want[1])
		}
	}
	if got := setting(t, "FAKELINE_TOKEN").Display(c); got != "set" {
		t.Errorf("the token displays as %q, want set", got)
	}
	if out := fmt.Sprintf("%+v %#v", *c, c); strings.Contains(out, "LEAKED") {
		t.Errorf("printing the configuration shows the token:\n%s", out)
	}
	if err := c.Validate(ValidateOptions{RequireKeys: true}); err != nil {
		t.Errorf("a complete fakeline account is refused: %v", err)
	}

	unset := mustLoad(t, LoadOptions{WorkDir: t.TempDir()})
	if got := unset.Value("HANDSET_FAKELINE_URL"); got != "https://api.fakeline.example" {
		t.Errorf("the URL's default is %q", got)
	}
	if got := unset.Source("HANDSET_FAKELINE_CODEC"); got != "default" {
		t.Errorf("an unset setting's source is %q, want default", got)
	}
}

func TestDeclaredSettingsAreChecked(t *testing.T) {
	withCarriers(t, fakeline)
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_FAKELINE_URL=ftp://files.example", "HANDSET_FAKELINE_CODEC=opus"}})
	err := c.Validate(ValidateOptions{})
	if fe := errorFor(t, err, "HANDSET_FAKELINE_URL"); !strings.Contains(fe.Reason, "http") {
		t.Errorf("an ftp URL is refused for %q", fe.Reason)
	}
	if fe := errorFor(t, err, "HANDSET_FAKELINE_CODEC"); !strings.Contains(fe.Error(), `"opus" is not one of ulaw, l16`) {
		t.Errorf("a codec that is no choice: %v", fe)
	}
}

func TestRequiredTogetherNamesTheMissingSetting(t *testing.T) {
	withCarriers(t, fakeline)
	for _, tt := range []struct{ set, missing string }{
		{"FAKELINE_ACCOUNT=acc", "FAKELINE_TOKEN"},
		{"FAKELINE_TOKEN=LEAKED-tok", "FAKELINE_ACCOUNT"},
	} {
		c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{tt.set}})
		fe := errorFor(t, c.Validate(ValidateOptions{RequireKeys: true}), tt.missing)
		set := strings.SplitN(tt.set, "=", 2)[0]
		if !strings.Contains(fe.Reason, "is required with "+set) || !strings.Contains(fe.Reason, "Fakeline") {
			t.Errorf("%s alone: %v", set, fe)
		}
		if strings.Contains(fe.Error(), "LEAKED") {
			t.Errorf("the error quotes the token: %v", fe)
		}
	}
	none := mustLoad(t, LoadOptions{WorkDir: t.TempDir()})
	if err := none.Validate(ValidateOptions{RequireKeys: true}); err != nil {
		t.Errorf("a carrier nobody set up is an error: %v", err)
	}
}

func TestCarrierChoiceMustBeConfigured(t *testing.T) {
	withCarriers(t, fakeline)
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_CARRIER=fakeline"}})
	fe := errorFor(t, c.Validate(ValidateOptions{RequireKeys: true}), "HANDSET_CARRIER")
	if !strings.Contains(fe.Reason, "Fakeline, which is not configured: set FAKELINE_ACCOUNT and FAKELINE_TOKEN") {
		t.Errorf("an unconfigured choice: %v", fe)
	}
	ok := mustLoad(t, LoadOptions{WorkDir: t.TempDir(),
		Environ: []string{"HANDSET_CARRIER=Fakeline", "FAKELINE_ACCOUNT=acc", "FAKELINE_TOKEN=tok"}})
	if err := ok.Validate(ValidateOptions{RequireKeys: true}); err != nil {
		t.Errorf("a configured choice is refused: %v", err)
	}
	if ok.Carrier != "fakeline" {
		t.Errorf("HANDSET_CARRIER reads as %q", ok.Carrier)
	}
	unknown := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_CARRIER=nosuch"}})
	if fe := errorFor(t, unknown.Validate(ValidateOptions{}), "HANDSET_CARRIER"); !strings.Contains(fe.Reason, "is not one of") {
		t.Errorf("a name that is no carrier: %v", fe)
	}
}
