// Documentation, not built: a Flutter app signing in through the sidecar on Android
// with the `sign_in_with_apple` package. On iOS/macOS the same call uses the native sheet and
// the token's audience is the bundle id (apple.native_audiences); on Android it runs Apple's
// web flow with the Services ID, and the sidecar's relay brings the result back to the app.
//
// sidecar.yaml:
//   apple.client_id: com.example.web              # the Services ID
//   apple.android_packages: [com.example.app]     # this app's applicationId
//   apple.native_audiences: [com.example.app]     # the iOS bundle id, if the app also runs there
// Apple portal: add https://app.example.com/.auth/android/callback as a Return URL of the
// Services ID (`sidecar check` prints it).
//
// android/app/src/main/AndroidManifest.xml, inside <application> (the package's callback
// activity receives the relay's intent://callback?…#Intent;…;scheme=signinwithapple;end):
//   <activity
//       android:name="com.aboutyou.dart_packages.sign_in_with_apple.SignInWithAppleCallback"
//       android:exported="true">
//     <intent-filter>
//       <action android:name="android.intent.action.VIEW" />
//       <category android:name="android.intent.category.DEFAULT" />
//       <category android:name="android.intent.category.BROWSABLE" />
//       <data android:scheme="signinwithapple" />
//       <data android:path="callback" />
//     </intent-filter>
//   </activity>
import 'dart:convert';

import 'package:http/http.dart' as http;
import 'package:sign_in_with_apple/sign_in_with_apple.dart';

const base = 'https://app.example.com'; // public_url

class SidecarSession {
  SidecarSession(this.token, this.expiresAt, this.user);
  final String token;
  final int expiresAt; // Unix seconds: refresh before then
  final Map<String, dynamic> user; // {"id", "email", "name"}

  factory SidecarSession.fromJson(Map<String, dynamic> json) =>
      SidecarSession(json['token'] as String, json['expires_at'] as int, json['user'] as Map<String, dynamic>);

  Map<String, String> get headers => {'Authorization': 'Bearer $token'};
}

Future<SidecarSession> signIn() async {
  // 1. A sidecar nonce: required for tokens of the web flow (Android), whatever the config says.
  final nonceAnswer = await http.get(Uri.parse('$base/.auth/native/nonce'));
  final nonce = jsonDecode(nonceAnswer.body)['nonce'] as String;

  // 2. Apple: the native sheet on iOS/macOS, the web flow through the relay on Android.
  final credential = await SignInWithApple.getAppleIDCredential(
    scopes: [AppleIDAuthorizationScopes.email, AppleIDAuthorizationScopes.fullName],
    nonce: nonce, // the package passes it as is (its SHA-256 hex is accepted too)
    webAuthenticationOptions: WebAuthenticationOptions(
      clientId: 'com.example.web',
      redirectUri: Uri.parse('$base/.auth/android/callback'),
      // With several android_packages, each app adds ?package=<applicationId> here and sends
      // "androidPackage" below.
    ),
  );

  // 3. The sidecar verifies the token, exchanges the code and answers a bearer session.
  final answer = await http.post(
    Uri.parse('$base/.auth/native'),
    headers: {'Content-Type': 'application/json'},
    body: jsonEncode({
      'identityToken': credential.identityToken,
      'authorizationCode': credential.authorizationCode,
      'nonce': nonce,
      'firstName': credential.givenName, // first sign-in only
      'lastName': credential.familyName,
    }),
  );
  if (answer.statusCode != 200) {
    // {"error": "<reason>"}, e.g. nonce_replayed, android_nonce_required, policy_denied_email
    throw Exception('sign-in failed: ${answer.body}');
  }
  return SidecarSession.fromJson(jsonDecode(answer.body) as Map<String, dynamic>);
}

/// Before `expiresAt`: same session, new token.
Future<SidecarSession> refresh(SidecarSession session) async {
  final answer = await http.post(Uri.parse('$base/.auth/native/refresh'), headers: session.headers);
  if (answer.statusCode != 200) throw Exception('signed out: ${answer.body}'); // sign in again
  return SidecarSession.fromJson(jsonDecode(answer.body) as Map<String, dynamic>);
}

/// Any API call: the sidecar swaps the bearer for X-Auth-User-Id, X-Auth-Email, … headers.
Future<http.Response> api(SidecarSession session, String path) =>
    http.get(Uri.parse('$base$path'), headers: session.headers);

Future<void> signOut(SidecarSession session) =>
    http.post(Uri.parse('$base/.auth/logout'), headers: session.headers);
