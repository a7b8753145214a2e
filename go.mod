module github.com/memkit/memkit

go 1.24
