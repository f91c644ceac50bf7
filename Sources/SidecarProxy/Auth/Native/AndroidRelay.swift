import Logging
import SidecarHTTP

/// `POST {prefix}/android/callback`: Android has no native Sign in with Apple, so
/// an app runs Apple's web authorization itself (Services ID as `client_id`, this URL as
/// `redirect_uri`) and Apple's `form_post` lands here. The sidecar creates no session: it
/// hands the fields back to the app with a 307 to an Android intent URL, as the
/// `sign_in_with_apple` package's reference server does; the app then posts them to
/// `{prefix}/native`. Only listed packages are ever targeted — never an open redirect to
/// another app.
enum AndroidRelay {
    /// The form fields passed on, in this order; anything else Apple (or anyone) posts is dropped.
    static let fields = ["code", "id_token", "state", "user", "error"]

    enum Refusal: String, Error {
        /// The form is not `application/x-www-form-urlencoded` text, or names a field twice.
        case formInvalid = "relay_form_invalid"
        /// `?package=` names an unlisted package, or several are listed and none is named.
        case packageNotListed = "relay_package_not_listed"
    }

    /// The package to hand the result to: the `?package=` of the callback URL, which must be
    /// listed, or the only listed one.
    static func package(query: FormFields?, listed: [String]) throws(Refusal) -> String {
        let named = query?.count("package") ?? 0
        guard named <= 1 else { throw .packageNotListed }
        if let name = query?.single("package") {
            guard listed.contains(name) else { throw .packageNotListed }
            return name
        }
        guard listed.count == 1 else { throw .packageNotListed }
        return listed[0]
    }

    /// `intent://callback?<fields>#Intent;package=<package>;scheme=signinwithapple;end`, each
    /// received field form-urlencoded again (every byte outside `A-Z a-z 0-9 - . _ ~` as %XX,
    /// so nothing from the form can end the query or reach the `#Intent` part).
    static func intentURL(form: FormFields, package: String) throws(Refusal) -> String {
        var query: [String] = []
        for name in fields {
            guard form.count(name) <= 1 else { throw .formInvalid }
            if let value = form.single(name) { query.append(name + "=" + PercentEncoding.encode(value)) }
        }
        return "intent://callback?" + query.joined(separator: "&") + "#Intent;package=" + package
            + ";scheme=signinwithapple;end"
    }
}
