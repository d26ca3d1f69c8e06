package nats

import "testing"

// The embedded server is the only copy of the records (R1 by default), and
// the latest record of an election holds its term. JetStream's file store
// fsyncs every two minutes unless told otherwise, so an acknowledged record
// could be lost with the machine (power loss, kernel panic) and the next
// leadership would get a term that was already handed out. The embedded
// server must sync every write before acknowledging it.
func TestEmbeddedServerSyncsEveryWrite(t *testing.T) {
	for _, cfg := range []EmbeddedConfig{
		{DataDir: t.TempDir()},
		{DataDir: t.TempDir(), ServerName: "a", ClusterListen: "127.0.0.1:0", Routes: []string{"127.0.0.1:1"}},
	} {
		opts, err := cfg.serverOptions()
		if err != nil {
			t.Fatal(err)
		}
		if !opts.SyncAlways {
			t.Errorf("cluster %q: SyncAlways is off: acknowledged records may be lost with the machine", cfg.ClusterListen)
		}
	}
}
