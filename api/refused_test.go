package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/electorhq/elector/webhooks"
)

// TestRefusedDetailNamesTheSettingOnce: whatever the guard's words, the
// detail names webhooks.allow_private_networks once, with its flag and
// environment variable, where the setting would let the URL through, and
// not for a scheme that no setting allows.
func TestRefusedDetailNamesTheSettingOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		guard   string
		setting bool
	}{
		{"169.254.169.254 is a link-local (cloud metadata) address; set webhooks.allow_private_networks to allow it", true},
		{"localhost is loopback; set webhooks.allow_private_networks to allow it", true},
		{"hooks.internal resolves to 10.0.0.7, a private address; set webhooks.allow_private_networks to allow it", true},
		{`host "::1%lo" has a zone or a percent sign; use a public name or address`, true},
		{`scheme "ftp"; only http and https are delivered to`, false},
	}
	for _, tt := range tests {
		t.Run(tt.guard, func(t *testing.T) {
			t.Parallel()
			d := refusedDetail(fmt.Errorf("%w: %s", webhooks.ErrDestinationRefused, tt.guard))
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
