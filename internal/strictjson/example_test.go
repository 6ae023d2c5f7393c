package strictjson_test

import (
	"errors"
	"fmt"

	"github.com/mcpguard/mcpguard/internal/strictjson"
)

func ExampleMembers() {
	read := []string{"iss", "sub"}
	for _, doc := range []string{
		`{"iss":"https://as.example.com","sub":"alice","x":[1,2]}`,
		`{"iss":"a","sub":"alice","sub":"mallory"}`,
		`{"iss":"a","SUB":"mallory"}`,
		"{\"iss\":\"\xff\"}",
	} {
		err := strictjson.Members([]byte(doc), read, func(name, value []byte) error {
			if s, ok := strictjson.String(value); ok {
				fmt.Printf("%s=%s ", name, s)
			}
			return nil
		})
		switch {
		case err == nil:
			fmt.Println("ok")
		case errors.Is(err, strictjson.ErrDuplicateName), errors.Is(err, strictjson.ErrCaseVariant), errors.Is(err, strictjson.ErrInvalidUTF8):
			fmt.Println("refused:", err)
		}
	}
	// Output:
	// iss=https://as.example.com sub=alice ok
	// iss=a sub=alice refused: strictjson: duplicate member name
	// iss=a SUB=mallory refused: strictjson: case-variant member name
	// refused: strictjson: invalid UTF-8
}
