import Foundation
import SidecarCrypto

/// The JSON body of `POST {prefix}/native`: the values an app got from
/// `ASAuthorizationAppleIDCredential`. Parsed strictly on types (a field of the wrong type is
/// a client bug worth a 400, not something to guess around) and leniently on presence:
/// unknown fields are ignored, an empty string or `null` counts as absent. An `email` in the
/// body is never read — the email comes from the verified identity token alone.
struct NativeSignInBody: Equatable {
    var identityToken: String
    var authorizationCode: String?
    var nonce: String?
    /// The display name from `firstName`/`lastName` (or `fullName.givenName/familyName`, the
    /// shape of `PersonNameComponents`), cleaned like the web `user` field; nil when absent.
    var name: String?
    /// Android: the package whose `?package=` the app added to the relay URL it
    /// used as `redirect_uri`, so the code is exchanged with exactly that URL. nil: the plain URL.
    var androidPackage: String? = nil

    enum Problem: Error, Equatable {
        case invalid
        case identityTokenMissing

        var failure: LoginFailure { self == .invalid ? .bodyInvalid : .identityTokenMissing }
    }

    static func parse(_ body: [UInt8]) throws(Problem) -> NativeSignInBody {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(body)),
              let object = value.objectValue
        else { throw .invalid }
        guard let identityToken = try string(object["identityToken"]) else { throw .identityTokenMissing }
        var first = try string(object["firstName"])
        var last = try string(object["lastName"])
        if first == nil, last == nil, let full = object["fullName"], full != .null {
            guard let components = full.objectValue else { throw .invalid }
            first = try string(components["givenName"])
            last = try string(components["familyName"])
        }
        return NativeSignInBody(
            identityToken: identityToken, authorizationCode: try string(object["authorizationCode"]),
            nonce: try string(object["nonce"]), name: AppleUserName.join(first: first, last: last),
            androidPackage: try string(object["androidPackage"]))
    }

    /// A string field: nil when absent, `null` or empty; any other type is invalid.
    private static func string(_ value: JSONValue?) throws(Problem) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text.isEmpty ? nil : text
        default: throw .invalid
        }
    }
}
