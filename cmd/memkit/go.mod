module github.com/memkit/memkit/cmd/memkit

go 1.24.0

require (
	github.com/bytedance/gopkg v0.1.4
	github.com/libp2p/go-buffer-pool v0.1.0
	github.com/memkit/memkit v0.0.0-00010101000000-000000000000
	github.com/schollz/progressbar/v3 v3.19.0
	github.com/valyala/bytebufferpool v1.0.0
	google.golang.org/grpc v1.80.0
)

require (
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	golang.org/x/sys v0.41.0 // indirect
	golang.org/x/term v0.40.0 // indirect
)

replace github.com/memkit/memkit => ../..
