/// JWT claims with typed accessors and the standard validations.
public struct JWTClaims: Sendable, Equatable {
    public let values: [String: JSONValue]

    public init(_ values: [String: JSONValue]) { self.values = values }

    public subscript(name: String) -> JSONValue? { values[name] }

    public func string(_ name: String) -> String? { values[name]?.stringValue }
    public func integer(_ name: String) -> Int64? { values[name]?.integerValue }
    /// `true`/`false` or `"true"`/`"false"`.
    public func bool(_ name: String) -> Bool? { values[name]?.lenientBoolValue }

    public func requiredString(_ name: String) throws(JWTError) -> String {
        guard let value = values[name] else { throw .missingClaim(name) }
        guard let string = value.stringValue else { throw .invalidClaim(name) }
        return string
    }

    public func requiredInteger(_ name: String) throws(JWTError) -> Int64 {
        guard let value = values[name] else { throw .missingClaim(name) }
        guard let integer = value.integerValue else { throw .invalidClaim(name) }
        return integer
    }

    /// An optional boolean claim that, when present, must be a boolean or its string form.
    public func optionalBool(_ name: String) throws(JWTError) -> Bool? {
        guard let value = values[name] else { return nil }
        guard let bool = value.lenientBoolValue else { throw .invalidClaim(name) }
        return bool
    }

    /// `aud` as a list: a single string or an array of strings.
    public func audiences() throws(JWTError) -> [String] {
        switch values["aud"] {
        case nil: throw .missingClaim("aud")
        case .string(let audience)?: return [audience]
        case .array(let items)?:
            var audiences = [String]()
            for item in items {
                guard let audience = item.stringValue else { throw .invalidClaim("aud") }
                audiences.append(audience)
            }
            return audiences
        default: throw .invalidClaim("aud")
        }
    }

    public func validateIssuer(_ expected: String) throws(JWTError) {
        guard try requiredString("iss") == expected else { throw .wrongIssuer }
    }

    /// At least one audience must be in `allowed`.
    public func validateAudience(in allowed: Set<String>) throws(JWTError) {
        guard try audiences().contains(where: allowed.contains) else { throw .wrongAudience }
    }

    /// `exp` is required and must be in the future, `iat` (if `requireIssuedAt`) and `nbf` (if
    /// present) must not be in the future — each with `leeway` seconds of clock skew.
    public func validateTimes(now: Int64, leeway: Int64, requireIssuedAt: Bool = true) throws(JWTError) {
        let expiresAt = try requiredInteger("exp")
        guard now < expiresAt.addingReportingOverflow(leeway).partialValue else { throw .expired }
        if values["nbf"] != nil {
            guard try requiredInteger("nbf") <= now + leeway else { throw .notYetValid }
        }
        if requireIssuedAt || values["iat"] != nil {
            guard try requiredInteger("iat") <= now + leeway else { throw .issuedInFuture }
        }
    }
}
