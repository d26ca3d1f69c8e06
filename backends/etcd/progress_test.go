package etcd

import "testing"

func TestProgressIsTrustedFromFixedVersions(t *testing.T) {
	tests := []struct {
		version string
		want    bool
	}{
		{"3.4.23", false}, // Debian's etcd-server 3.4
		{"3.4.30", false},
		{"3.4.31", true},
		{"3.5.12", false},
		{"3.5.13", true},
		{"3.5.21", true},
		{"3.6.0", true},
		{"3.6.0-rc.1", true},
		{"3.7.3", true},
		{"4.0.0", true},
		{"2.3.8", false},
		{"3.3.27", false},
		{"", false},
		{"3.5", false},
		{"v3.5.13", false},
	}
	for _, tt := range tests {
		if got := progressInOrder(tt.version); got != tt.want {
			t.Errorf("progressInOrder(%q) = %v, want %v", tt.version, got, tt.want)
		}
	}
}
