import SidecarHTTP

/// "\n" in the literal becomes CRLF.
func crlf(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    for b in s.utf8 {
        if b == 0x0A { out.append(0x0D) }
        out.append(b)
    }
    return out
}

func parseRequest(_ bytes: [UInt8], limits: HTTPHeadLimits = .default) -> Result<HTTPRequestHead?, HTTPHeadError> {
    Result { () throws(HTTPHeadError) in try HTTPRequestHead.parse(bytes, limits: limits) }
}

func parseResponse(_ bytes: [UInt8], method: HTTPMethod = .get) -> Result<HTTPResponseHead?, HTTPHeadError> {
    Result { () throws(HTTPHeadError) in try HTTPResponseHead.parse(bytes, requestMethod: method) }
}
