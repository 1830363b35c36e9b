from django.urls import path

from accounts import views
from accounts.view_as import STOP_PATH

app_name = "accounts"

urlpatterns = [
    path("api/auth/login", views.login_view, name="login"),
    path("login", views.login_unprefixed_view, name="login-unprefixed"),
    path("api/auth/logout", views.logout_view, name="logout"),
    path("logout", views.logout_unprefixed_view, name="logout-unprefixed"),
    path("api/auth/auth/callback", views.provider_callback_view, name="provider-callback"),
    path("api/auth/auth/<str:provider>", views.provider_login_view, name="provider-login"),
    path(STOP_PATH.lstrip("/"), views.view_as_stop_view, name="view-as-stop"),
]
