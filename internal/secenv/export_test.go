package secenv

// Methods are the ways of telling AT_SECURE, for the tests; ok is false
// where one cannot answer.
var Methods = map[string]func() (secure, ok bool){
	"getauxval":    getauxvalSecure,
	"runtime_auxv": runtimeAuxvSecure,
	"proc_auxv":    procAuxvSecure,
}

var ParseAuxv = parseAuxv
