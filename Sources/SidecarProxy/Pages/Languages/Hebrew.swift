extension PageText {
    var hebrew: String {
        switch self {
        case .statusLabel: "סטטוס"
        case .reasonLabel: "סיבה"
        case .requestIDLabel: "מזהה בקשה"
        case .signInWithApple: "התחברות באמצעות Apple"
        case .signInAgain: "התחברות מחדש"
        case .useAnotherAppleID: "שימוש ב־Apple ID אחר"
        case .startNewSignIn: "התחלת התחברות חדשה"
        case .signOut: "התנתקות"

        case .signInTitle: "התחברות"
        case .signInMessage: "יש להתחבר עם ה־Apple ID שלך כדי להמשיך לאתר הזה."
        case .unauthorizedTitle: "נדרשת התחברות"
        case .unauthorizedMessage: "הדף הזה מיועד רק למי שמחובר. יש להתחבר עם ה־Apple ID שלך ולנסות שוב."
        case .signedOutTitle: "התנתקת"
        case .signedOutMessage: "התנתקת מהאתר הזה בדפדפן הזה. אפשר לסגור את החלון, או להתחבר מחדש כדי להמשיך."
        case .accountDeletedTitle: "החשבון נמחק"
        case .accountDeletedMessage:
            "החשבון שלך נמחק והתנתקת בכל המכשירים; לאתר הזה כבר אין גישה ל־Apple ID שלך."
        case .storeUnavailableTitle: "נא לנסות שוב"
        case .storeUnavailableMessage: "שירות ההתחברות לא הצליח לשמור את השלב הזה, ולכן שום דבר לא השתנה. נא לנסות שוב בעוד רגע."
        case .ruleRefusedTitle: "לא פתוח לחשבון שלך"
        case .ruleRefusedMessage:
            "התחברת, אבל הדף הזה לא פתוח ל־Apple ID שלך. אפשר לבקש גישה מבעל האתר, או להתחבר עם Apple ID אחר."
        case .confirmSignOutTitle: "להתנתק?"
        case .confirmSignOutMessage: "קישור ההתנתקות הגיע מאתר אחר, ולכן לא בוצע. יש להשתמש בכפתור כדי להתנתק."

        case .notFoundTitle: "הדף לא נמצא"
        case .notFoundMessage: "אין דף בכתובת הזו. כדאי לבדוק את הקישור, או לחזור לדף הבית של האתר."
        case .methodNotAllowedTitle: "לא מותר כאן"
        case .methodNotAllowedMessage: "הכתובת הזו לא מקבלת בקשה מהסוג הזה. יש לחזור ולהשתמש בקישורים ובכפתורים של האתר עצמו."
        case .upstreamUnavailableTitle: "האתר לא עונה"
        case .upstreamUnavailableMessage: "לא ניתן היה להגיע ליישום שמאחורי הדף הזה. נא לנסות שוב בעוד רגע."
        case .upstreamTimeoutTitle: "האתר מתעכב יותר מדי"
        case .upstreamTimeoutMessage: "היישום שמאחורי הדף הזה לא ענה בזמן. נא לנסות שוב בעוד רגע."
        case .otherErrorTitle: "משהו השתבש"
        case .otherErrorMessage: "לא ניתן היה להשלים את הבקשה. נא לנסות שוב בעוד רגע."

        case .accountNotDeletedTitle: "החשבון לא נמחק"
        case .revocationFailedMessage: "Apple לא אישרה את הביטול, ולכן שום דבר לא השתנה. נא לנסות שוב בעוד רגע."
        case .deletionCrossSiteMessage: "הבקשה הגיעה מאתר אחר, ולכן שום דבר לא השתנה. יש למחוק את החשבון מהדף של האתר הזה עצמו."
        case .deletionNeedsSignInMessage: "לא התחברת, ולכן אין חשבון למחוק. יש להתחבר קודם, ואז למחוק את החשבון."

        case .policyDeniedTitle: "אין לך הרשאה להתחבר כאן"
        case .policyDeniedMessage:
            "ה־Apple ID שלך לא נמצא ברשימת החשבונות המורשים של האתר הזה. אפשר להתחבר עם Apple ID אחר, או לבקש גישה מבעל האתר."
        case .appleTimeoutTitle: "Apple לא ענתה בזמן"
        case .appleUnavailableTitle: "התחברות באמצעות Apple לא זמינה כרגע"
        case .appleFailedMessage: "Apple לא ענתה כמצופה, ולכן לא התחברת. נא לנסות שוב בעוד רגע."
        case .internalErrorTitle: "ההתחברות נכשלה אצלנו"
        case .internalErrorMessage:
            "משהו השתבש באתר הזה, ולכן לא התחברת. יש להתחיל התחברות חדשה; אם זה קורה שוב, אפשר לפנות לתמיכה עם הפרטים שלמטה."
        case .signInNotRecordedMessage:
            "שירות ההתחברות לא הצליח לשמור את השלב הזה, ולכן לא התחברת. יש להתחיל התחברות חדשה בעוד רגע."
        case .cancelledTitle: "ההתחברות בוטלה"
        case .cancelledMessage: "ביטלת את ההתחברות באמצעות Apple."
        case .notVerifiedTitle: "לא ניתן היה לאמת את ההתחברות"
        case .notVerifiedMessage: "האישור של Apple לזהות שלך לא עבר בדיקה, ולכן לא התחברת. יש להתחיל התחברות חדשה."
        case .stateMissingTitle: "לא ניתן היה לשייך את ההתחברות הזו לדפדפן שלך"
        case .stateMissingMessage:
            "הדפדפן שלך לא החזיר את קובץ ה־Cookie של ההתחברות הזו. יש לאפשר קובצי Cookie לאתר הזה, ואז להתחיל התחברות חדשה."
        case .stateExpiredTitle: "תוקף ההתחברות הזו פג"
        case .stateExpiredMessage:
            "התחברות תקפה פעם אחת ולמשך 10 דקות; תוקפה של זו פג או שכבר נעשה בה שימוש. יש להתחיל התחברות חדשה."
        case .incompleteTitle: "ההתחברות לא הושלמה"
        case .incompleteMessage: "התשובה של Apple לא הייתה שלמה, ולכן לא התחברת. יש להתחיל התחברות חדשה."
        }
    }
}
