extension PageText {
    var german: String {
        switch self {
        case .statusLabel: "Status"
        case .reasonLabel: "Grund"
        case .requestIDLabel: "Anfrage-ID"
        case .signInWithApple: "Mit Apple anmelden"
        case .signInAgain: "Erneut anmelden"
        case .useAnotherAppleID: "Andere Apple-ID verwenden"
        case .startNewSignIn: "Neu anmelden"
        case .signOut: "Abmelden"

        case .signInTitle: "Anmelden"
        case .signInMessage: "Melde dich mit deiner Apple-ID an, um diese Website zu nutzen."
        case .unauthorizedTitle: "Anmeldung erforderlich"
        case .unauthorizedMessage:
            "Diese Seite ist nur für angemeldete Personen. Melde dich mit deiner Apple-ID an und versuche es dann erneut."
        case .signedOutTitle: "Du bist abgemeldet"
        case .signedOutMessage:
            "Du bist in diesem Browser von dieser Website abgemeldet. Schließe dieses Fenster oder melde dich erneut an, um fortzufahren."
        case .accountDeletedTitle: "Account gelöscht"
        case .accountDeletedMessage:
            "Dein Account wurde gelöscht und du bist auf allen Geräten abgemeldet; diese Website hat keinen Zugriff mehr auf deine Apple-ID."
        case .storeUnavailableTitle: "Bitte versuche es erneut"
        case .storeUnavailableMessage:
            "Der Anmeldedienst konnte diesen Schritt nicht speichern, daher wurde nichts geändert. Versuche es gleich noch einmal."
        case .ruleRefusedTitle: "Nicht für deinen Account freigegeben"
        case .ruleRefusedMessage:
            "Du bist angemeldet, aber diese Seite ist für deine Apple-ID nicht freigegeben. Bitte den Betreiber der Website um Zugang oder melde dich mit einer anderen Apple-ID an."
        case .confirmSignOutTitle: "Abmelden?"
        case .confirmSignOutMessage:
            "Der Abmeldelink kam von einer anderen Website und wurde deshalb nicht ausgeführt. Melde dich mit der Taste ab."

        case .notFoundTitle: "Seite nicht gefunden"
        case .notFoundMessage:
            "Unter dieser Adresse gibt es keine Seite. Prüfe den Link oder kehre zur Startseite der Website zurück."
        case .methodNotAllowedTitle: "Hier nicht erlaubt"
        case .methodNotAllowedMessage:
            "Diese Adresse nimmt diese Art von Anfrage nicht an. Gehe zurück und nutze die Links und Tasten der Website."
        case .upstreamUnavailableTitle: "Die Website antwortet nicht"
        case .upstreamUnavailableMessage:
            "Die Anwendung hinter dieser Seite war nicht erreichbar. Versuche es gleich noch einmal."
        case .upstreamTimeoutTitle: "Die Website braucht zu lange"
        case .upstreamTimeoutMessage:
            "Die Anwendung hinter dieser Seite hat nicht rechtzeitig geantwortet. Versuche es gleich noch einmal."
        case .otherErrorTitle: "Etwas ist schiefgelaufen"
        case .otherErrorMessage: "Diese Anfrage konnte nicht abgeschlossen werden. Versuche es gleich noch einmal."

        case .accountNotDeletedTitle: "Account nicht gelöscht"
        case .revocationFailedMessage:
            "Apple hat den Widerruf nicht bestätigt, daher wurde nichts geändert. Versuche es gleich noch einmal."
        case .deletionCrossSiteMessage:
            "Die Anfrage kam von einer anderen Website, daher wurde nichts geändert. Lösche deinen Account auf der Seite dieser Website."
        case .deletionNeedsSignInMessage:
            "Du bist nicht angemeldet, daher gibt es keinen Account zum Löschen. Melde dich zuerst an und lösche dann deinen Account."

        case .policyDeniedTitle: "Du darfst dich hier nicht anmelden"
        case .policyDeniedMessage:
            "Deine Apple-ID steht nicht auf der Liste der zugelassenen Accounts dieser Website. Melde dich mit einer anderen Apple-ID an oder bitte den Betreiber um Zugang."
        case .appleTimeoutTitle: "Apple hat nicht rechtzeitig geantwortet"
        case .appleUnavailableTitle: "„Mit Apple anmelden“ ist gerade nicht verfügbar"
        case .appleFailedMessage:
            "Apple hat nicht wie erwartet geantwortet, daher bist du nicht angemeldet. Versuche es gleich noch einmal."
        case .internalErrorTitle: "Anmeldung auf unserer Seite fehlgeschlagen"
        case .internalErrorMessage:
            "Auf dieser Website ist ein Fehler aufgetreten, daher bist du nicht angemeldet. Melde dich neu an; passiert es wieder, wende dich mit den Angaben unten an den Support."
        case .signInNotRecordedMessage:
            "Der Anmeldedienst konnte diesen Schritt nicht speichern, daher bist du nicht angemeldet. Melde dich gleich neu an."
        case .cancelledTitle: "Anmeldung abgebrochen"
        case .cancelledMessage: "Du hast die Anmeldung mit Apple abgebrochen."
        case .notVerifiedTitle: "Anmeldung konnte nicht bestätigt werden"
        case .notVerifiedMessage:
            "Apples Bestätigung deiner Identität war nicht gültig, daher bist du nicht angemeldet. Melde dich neu an."
        case .stateMissingTitle: "Diese Anmeldung passt nicht zu deinem Browser"
        case .stateMissingMessage:
            "Dein Browser hat das Cookie dieser Anmeldung nicht zurückgeschickt. Erlaube Cookies für diese Website und melde dich dann neu an."
        case .stateExpiredTitle: "Diese Anmeldung ist abgelaufen"
        case .stateExpiredMessage:
            "Eine Anmeldung gilt einmal und 10 Minuten lang; diese ist abgelaufen oder wurde schon verwendet. Melde dich neu an."
        case .incompleteTitle: "Anmeldung nicht abgeschlossen"
        case .incompleteMessage: "Apples Antwort war unvollständig, daher bist du nicht angemeldet. Melde dich neu an."
        }
    }
}
