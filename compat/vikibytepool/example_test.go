package bytepool_test

import (
	"fmt"
	"strings"

	bytepool "github.com/memkit/memkit/compat/vikibytepool"
)

// The Viki write-up's program, with only the import path changed: an item
// filled from a request body, then a JSON array built in a JSON item.
func Example() {
	pool := bytepool.New(16, 32768)
	buffer := pool.Checkout()
	buffer.ReadFrom(strings.NewReader(`{"user":"leto"}`))
	fmt.Println(string(buffer.Bytes()))
	buffer.Close()

	jsonPool := bytepool.NewJson(16, 4096)
	item := jsonPool.Checkout()
	defer item.Close()
	item.BeginObject()
	item.WriteKeyString("name", "Leto \"the\"\nsecond")
	item.WriteKeyArray("ids")
	for i := 1; i <= 3; i++ {
		item.WriteInt(i)
	}
	item.EndArray()
	item.EndObject()
	fmt.Println(item.String(), item.Err())
	// Output:
	// {"user":"leto"}
	// {"name":"Leto \"the\"\nsecond","ids":[1,2,3]} <nil>
}
