package api

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/electorhq/elector/webhooks"
)

// internalResolver resolves every name to a private address.
type internalResolver struct{}

func (internalResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("10.0.0.7")}, nil
}

// TestRefusedDetailNamesTheSettingOnce: whatever the guard's words, the
// detail names webhooks.allow_private_networks once, with its flag and
// environment variable, where the setting would let the URL through, and
// not for a scheme that no setting allows.
func TestRefusedDetailNamesTheSettingOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url     string
		setting bool
	}{
		{"http://169.254.169.254/hook", true},
		{"http://localhost:8080/hook", true},
		{"https://hooks.internal/hook", true},
		{"http://[::1%25lo]/hook", true},
		{"ftp://example.com/hook", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			err := webhooks.CheckURL(context.Background(), tt.url, false, internalResolver{})
			if err == nil {
				t.Fatal("the guard let the URL through")
			}
			d := refusedDetail(err)
			named := strings.Count(d, "allow_private_networks") == 1 && strings.Contains(d, "--webhooks-allow-private-networks") &&
				strings.Contains(d, "ELECTOR_WEBHOOKS_ALLOW_PRIVATE_NETWORKS")
			if named != tt.setting || strings.Count(d, "use a public") > 1 || !strings.HasPrefix(d, "the webhook URL is refused: ") {
				t.Fatalf("detail %q", d)
			}
			if !tt.setting && strings.Contains(d, "allow_private_networks") {
				t.Fatalf("detail %q names a setting that cannot help", d)
			}
		})
	}
}
