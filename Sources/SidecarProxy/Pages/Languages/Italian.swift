extension PageText {
    var italian: String {
        switch self {
        case .statusLabel: "Stato"
        case .reasonLabel: "Motivo"
        case .requestIDLabel: "ID richiesta"
        case .signInWithApple: "Accedi con Apple"
        case .signInAgain: "Accedi di nuovo"
        case .useAnotherAppleID: "Usa un altro ID Apple"
        case .startNewSignIn: "Ripeti l’accesso"
        case .signOut: "Esci"

        case .signInTitle: "Accedi"
        case .signInMessage: "Accedi con il tuo ID Apple per continuare su questo sito."
        case .unauthorizedTitle: "Accesso richiesto"
        case .unauthorizedMessage:
            "Questa pagina è riservata a chi ha effettuato l’accesso. Accedi con il tuo ID Apple, poi riprova."
        case .signedOutTitle: "Sei uscito"
        case .signedOutMessage:
            "Sei uscito da questo sito su questo browser. Chiudi questa finestra, oppure accedi di nuovo per continuare."
        case .accountDeletedTitle: "Account eliminato"
        case .accountDeletedMessage:
            "Il tuo account è stato eliminato e sei uscito su tutti i dispositivi; questo sito non ha più accesso al tuo ID Apple."
        case .storeUnavailableTitle: "Riprova"
        case .storeUnavailableMessage:
            "Il servizio di accesso non ha potuto registrare questo passaggio, quindi non è cambiato nulla. Riprova tra un momento."
        case .ruleRefusedTitle: "Non disponibile per il tuo account"
        case .ruleRefusedMessage:
            "Hai effettuato l’accesso, ma questa pagina non è aperta al tuo ID Apple. Chiedi l’accesso al responsabile del sito, oppure accedi con un altro ID Apple."
        case .confirmSignOutTitle: "Vuoi uscire?"
        case .confirmSignOutMessage:
            "Il link per uscire proveniva da un altro sito, quindi non è stato seguito. Usa il pulsante per uscire."

        case .notFoundTitle: "Pagina non trovata"
        case .notFoundMessage:
            "Non c’è nessuna pagina a questo indirizzo. Controlla il link, oppure torna alla pagina iniziale del sito."
        case .methodNotAllowedTitle: "Non consentito qui"
        case .methodNotAllowedMessage:
            "Questo indirizzo non accetta questo tipo di richiesta. Torna indietro e usa i link e i pulsanti del sito."
        case .upstreamUnavailableTitle: "Il sito non risponde"
        case .upstreamUnavailableMessage:
            "Non è stato possibile raggiungere l’applicazione dietro questa pagina. Riprova tra un momento."
        case .upstreamTimeoutTitle: "Il sito impiega troppo tempo"
        case .upstreamTimeoutMessage:
            "L’applicazione dietro questa pagina non ha risposto in tempo. Riprova tra un momento."
        case .otherErrorTitle: "Si è verificato un problema"
        case .otherErrorMessage: "Non è stato possibile completare questa richiesta. Riprova tra un momento."

        case .accountNotDeletedTitle: "Account non eliminato"
        case .revocationFailedMessage:
            "Apple non ha confermato la revoca, quindi non è cambiato nulla. Riprova tra un momento."
        case .deletionCrossSiteMessage:
            "La richiesta proveniva da un altro sito, quindi non è cambiato nulla. Elimina il tuo account dalla pagina di questo sito."
        case .deletionNeedsSignInMessage:
            "Non hai effettuato l’accesso, quindi non c’è nessun account da eliminare. Prima accedi, poi elimina il tuo account."

        case .policyDeniedTitle: "Non puoi accedere qui"
        case .policyDeniedMessage:
            "Il tuo ID Apple non è nell’elenco degli account consentiti da questo sito. Accedi con un altro ID Apple, oppure chiedi l’accesso al responsabile del sito."
        case .appleTimeoutTitle: "Apple non ha risposto in tempo"
        case .appleUnavailableTitle: "Accedi con Apple non è disponibile al momento"
        case .appleFailedMessage:
            "Apple non ha risposto come previsto, quindi non hai effettuato l’accesso. Riprova tra un momento."
        case .internalErrorTitle: "Accesso non riuscito per un problema nostro"
        case .internalErrorMessage:
            "Si è verificato un problema su questo sito, quindi non hai effettuato l’accesso. Ripeti l’accesso; se succede di nuovo, contatta l’assistenza con i dettagli qui sotto."
        case .signInNotRecordedMessage:
            "Il servizio di accesso non ha potuto registrare questo passaggio, quindi non hai effettuato l’accesso. Ripeti l’accesso tra un momento."
        case .cancelledTitle: "Accesso annullato"
        case .cancelledMessage: "Hai annullato l’accesso con Apple."
        case .notVerifiedTitle: "Impossibile verificare l’accesso"
        case .notVerifiedMessage:
            "La conferma della tua identità da parte di Apple non è valida, quindi non hai effettuato l’accesso. Ripeti l’accesso."
        case .stateMissingTitle: "Questo accesso non corrisponde al tuo browser"
        case .stateMissingMessage:
            "Il tuo browser non ha rimandato il cookie di questo accesso. Consenti i cookie per questo sito, poi ripeti l’accesso."
        case .stateExpiredTitle: "Questo accesso è scaduto"
        case .stateExpiredMessage:
            "Un accesso vale una sola volta e per 10 minuti; questo è scaduto o è già stato usato. Ripeti l’accesso."
        case .incompleteTitle: "Accesso non completato"
        case .incompleteMessage: "La risposta di Apple era incompleta, quindi non hai effettuato l’accesso. Ripeti l’accesso."
        }
    }
}
