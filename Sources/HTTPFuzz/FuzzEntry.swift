// Built for real by the fuzz helper.
#if !FUZZING
@main enum Replay { static func main() {} }
#endif
