package grpcpool_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
)

// rawCodec sends a *[]byte as the message bytes, so that the test service
// needs no protoc. Unmarshal copies into the destination's own capacity.
type rawCodec struct{}

func (rawCodec) Name() string { return "memkit-raw" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	dst := v.(*[]byte)
	n := data.Len()
	if cap(*dst) < n {
		*dst = make([]byte, n)
	}
	*dst = (*dst)[:n]
	data.CopyTo(*dst)
	return nil
}

const (
	maxMsg      = 8 << 20
	unaryMethod = "/memkit.Echo/Unary"
	bidiMethod  = "/memkit.Echo/Stream"
)

// echoDesc is a hand-written service: Unary echoes its request, Stream
// echoes every message it receives.
var echoDesc = grpc.ServiceDesc{
	ServiceName: "memkit.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Unary",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in []byte
			if err := dec(&in); err != nil {
				return nil, err
			}
			return &in, nil
		},
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Stream",
		ServerStreams: true,
		ClientStreams: true,
		Handler: func(_ any, s grpc.ServerStream) error {
			var in []byte
			for {
				if err := s.RecvMsg(&in); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
				if err := s.SendMsg(&in); err != nil {
					return err
				}
			}
		},
	}},
}

// startEcho starts the echo service on 127.0.0.1 with serverOpts and
// returns a client connection made with dialOpts; both close at the end of
// the test.
func startEcho(tb testing.TB, serverOpts []grpc.ServerOption, dialOpts []grpc.DialOption) *grpc.ClientConn {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := grpc.NewServer(append([]grpc.ServerOption{
		grpc.ForceServerCodecV2(rawCodec{}), grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg),
	}, serverOpts...)...)
	srv.RegisterService(&echoDesc, struct{}{})
	go srv.Serve(lis)
	conn, err := grpc.NewClient(lis.Addr().String(), append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}),
			grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)),
	}, dialOpts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		srv.Stop()
	})
	return conn
}

// fill writes a pattern that depends on seed into b.
func fill(b []byte, seed int) {
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
}
