// Command etcdmain is etcd's own server command at the version of
// go.etcd.io/etcd/server/v3 in elector's go.mod. Tests that run etcd
// members as processes (to stop them with SIGSTOP, or kill them) build it
// with etcdtest.BuildModule; it is no part of elector.
package main
