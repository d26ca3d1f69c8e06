package etcd

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// The requests the builders make are the ones clientv3 makes of the same
// comparisons and operations, both ways: a wrapped KV (commitTxn) sends
// what the batcher would have.
func TestBuiltRequestsAreClientv3s(t *testing.T) {
	built := &pb.TxnRequest{
		Compare: []*pb.Compare{cmpCreated("ids/a", 0), cmpModified("sessions/s", 7), cmpNoneUnder("line/")},
		Success: []*pb.RequestOp{
			pbPut("ids/a", "1a", 0x1a),
			pbTxn([]*pb.Compare{cmpCreated("set", 0)}, []*pb.RequestOp{pbPut("set", "s", 0)}, []*pb.RequestOp{pbGet("set")}),
		},
		Failure: []*pb.RequestOp{{Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("gone/"), RangeEnd: []byte("gone0")}}}},
	}
	client := txnRequest(
		[]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision("ids/a"), "=", 0),
			clientv3.Compare(clientv3.ModRevision("sessions/s"), "=", 7),
			clientv3.Compare(clientv3.CreateRevision("line/"), "=", 0).WithPrefix(),
		},
		[]clientv3.Op{
			clientv3.OpPut("ids/a", "1a", clientv3.WithLease(0x1a)),
			clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision("set"), "=", 0)},
				[]clientv3.Op{clientv3.OpPut("set", "s")}, []clientv3.Op{clientv3.OpGet("set")}),
		},
		[]clientv3.Op{clientv3.OpDelete("gone/", clientv3.WithPrefix())})
	if !proto.Equal(built, client) {
		t.Errorf("built:\n%v\nclientv3's of the same:\n%v", built, client)
	}
	if back := txnRequest(clientTxn(built)); !proto.Equal(built, back) {
		t.Errorf("built:\n%v\nsent through a wrapped KV as:\n%v", built, back)
	}
}

// A request with a field the wrapped path cannot carry is refused loudly,
// not sent without it.
func TestClientTxnRefusesWhatItCannotCarry(t *testing.T) {
	for name, op := range map[string]*pb.RequestOp{
		"a put that asks for the previous value": {Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte("k"), PrevKv: true}}},
		"a limited range":                        {Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte("k"), Limit: 1}}},
		"a delete that asks for the values":      {Request: &pb.RequestOp_RequestDeleteRange{RequestDeleteRange: &pb.DeleteRangeRequest{Key: []byte("k"), PrevKv: true}}},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("converted without the field")
				}
			}()
			clientTxn(&pb.TxnRequest{Success: []*pb.RequestOp{op}})
		})
	}
}
