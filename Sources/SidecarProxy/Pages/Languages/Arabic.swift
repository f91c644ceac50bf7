extension PageText {
    var arabic: String {
        switch self {
        case .statusLabel: "الحالة"
        case .reasonLabel: "السبب"
        case .requestIDLabel: "معرّف الطلب"
        case .signInWithApple: "تسجيل الدخول باستخدام Apple"
        case .signInAgain: "تسجيل الدخول مجددًا"
        case .useAnotherAppleID: "استخدام معرّف Apple آخر"
        case .startNewSignIn: "بدء تسجيل دخول جديد"
        case .signOut: "تسجيل الخروج"

        case .signInTitle: "تسجيل الدخول"
        case .signInMessage: "سجّل الدخول باستخدام معرّف Apple الخاص بك للمتابعة إلى هذا الموقع."
        case .unauthorizedTitle: "يلزم تسجيل الدخول"
        case .unauthorizedMessage:
            "هذه الصفحة مخصصة للأشخاص الذين سجّلوا الدخول فقط. سجّل الدخول باستخدام معرّف Apple، ثم حاول مجددًا."
        case .signedOutTitle: "لقد سجّلت الخروج"
        case .signedOutMessage:
            "لقد سجّلت الخروج من هذا الموقع على هذا المتصفح. أغلق هذه النافذة، أو سجّل الدخول مجددًا للمتابعة."
        case .accountDeletedTitle: "تم حذف الحساب"
        case .accountDeletedMessage:
            "تم حذف حسابك وتسجيل خروجك على جميع الأجهزة؛ لم يعد بإمكان هذا الموقع الوصول إلى معرّف Apple الخاص بك."
        case .storeUnavailableTitle: "يُرجى المحاولة مجددًا"
        case .storeUnavailableMessage:
            "تعذّر على خدمة تسجيل الدخول حفظ هذه الخطوة، لذا لم يتغير شيء. حاول مجددًا بعد قليل."
        case .ruleRefusedTitle: "غير متاح لحسابك"
        case .ruleRefusedMessage:
            "لقد سجّلت الدخول، لكن هذه الصفحة غير متاحة لمعرّف Apple الخاص بك. اطلب الوصول من مالك الموقع، أو سجّل الدخول باستخدام معرّف Apple آخر."
        case .confirmSignOutTitle: "هل تريد تسجيل الخروج؟"
        case .confirmSignOutMessage:
            "جاء رابط تسجيل الخروج من موقع آخر، لذا لم يُتّبع. استخدم الزر لتسجيل الخروج."

        case .notFoundTitle: "الصفحة غير موجودة"
        case .notFoundMessage: "لا توجد صفحة على هذا العنوان. تحقّق من الرابط، أو عُد إلى الصفحة الرئيسية للموقع."
        case .methodNotAllowedTitle: "غير مسموح به هنا"
        case .methodNotAllowedMessage:
            "لا يقبل هذا العنوان هذا النوع من الطلبات. عُد واستخدم روابط الموقع وأزراره."
        case .upstreamUnavailableTitle: "الموقع لا يستجيب"
        case .upstreamUnavailableMessage: "تعذّر الوصول إلى التطبيق الذي يقف وراء هذه الصفحة. حاول مجددًا بعد قليل."
        case .upstreamTimeoutTitle: "الموقع يستغرق وقتًا طويلًا"
        case .upstreamTimeoutMessage: "لم يستجب التطبيق الذي يقف وراء هذه الصفحة في الوقت المحدد. حاول مجددًا بعد قليل."
        case .otherErrorTitle: "حدث خطأ ما"
        case .otherErrorMessage: "تعذّر إكمال هذا الطلب. حاول مجددًا بعد قليل."

        case .accountNotDeletedTitle: "لم يُحذف الحساب"
        case .revocationFailedMessage: "لم تؤكد Apple الإلغاء، لذا لم يتغير شيء. حاول مجددًا بعد قليل."
        case .deletionCrossSiteMessage:
            "جاء الطلب من موقع آخر، لذا لم يتغير شيء. احذف حسابك من صفحة هذا الموقع نفسه."
        case .deletionNeedsSignInMessage:
            "أنت لم تسجّل الدخول، لذا لا يوجد حساب لحذفه. سجّل الدخول أولًا، ثم احذف حسابك."

        case .policyDeniedTitle: "غير مسموح لك بتسجيل الدخول هنا"
        case .policyDeniedMessage:
            "معرّف Apple الخاص بك ليس ضمن قائمة الحسابات المسموح بها في هذا الموقع. سجّل الدخول باستخدام معرّف Apple آخر، أو اطلب الوصول من مالك الموقع."
        case .appleTimeoutTitle: "لم تستجب Apple في الوقت المحدد"
        case .appleUnavailableTitle: "تسجيل الدخول باستخدام Apple غير متاح حاليًا"
        case .appleFailedMessage: "لم تستجب Apple كما هو متوقع، لذا لم يتم تسجيل دخولك. حاول مجددًا بعد قليل."
        case .internalErrorTitle: "فشل تسجيل الدخول من جهتنا"
        case .internalErrorMessage:
            "حدث خطأ في هذا الموقع، لذا لم يتم تسجيل دخولك. ابدأ تسجيل دخول جديدًا؛ وإذا تكرر ذلك، فتواصل مع الدعم مع التفاصيل أدناه."
        case .signInNotRecordedMessage:
            "تعذّر على خدمة تسجيل الدخول حفظ هذه الخطوة، لذا لم يتم تسجيل دخولك. ابدأ تسجيل دخول جديدًا بعد قليل."
        case .cancelledTitle: "تم إلغاء تسجيل الدخول"
        case .cancelledMessage: "لقد ألغيت تسجيل الدخول باستخدام Apple."
        case .notVerifiedTitle: "تعذّر التحقق من تسجيل الدخول"
        case .notVerifiedMessage: "لم يجتز تأكيد Apple لهويتك التحقق، لذا لم يتم تسجيل دخولك. ابدأ تسجيل دخول جديدًا."
        case .stateMissingTitle: "تعذّرت مطابقة تسجيل الدخول هذا مع متصفحك"
        case .stateMissingMessage:
            "لم يُعِد متصفحك ملف تعريف الارتباط الخاص بتسجيل الدخول هذا. اسمح بملفات تعريف الارتباط لهذا الموقع، ثم ابدأ تسجيل دخول جديدًا."
        case .stateExpiredTitle: "انتهت صلاحية تسجيل الدخول هذا"
        case .stateExpiredMessage:
            "يصلح تسجيل الدخول مرة واحدة ولمدة 10 دقائق؛ وقد انتهت صلاحية هذا أو سبق استخدامه. ابدأ تسجيل دخول جديدًا."
        case .incompleteTitle: "لم يكتمل تسجيل الدخول"
        case .incompleteMessage: "كان رد Apple غير مكتمل، لذا لم يتم تسجيل دخولك. ابدأ تسجيل دخول جديدًا."
        }
    }
}
