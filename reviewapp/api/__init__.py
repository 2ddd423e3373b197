from ninja import NinjaAPI

api = NinjaAPI(title="reviewapp API", version="1", docs_url="/docs")
